// Address generators that turn routing metadata into tile addresses for RandomOffChipLoad (the
// artifact's ExpertAddrGen, step-paper-notes §2.6): a time-multiplexed region fetches the
// weights of whichever expert EagerMerge just selected.
#include <algorithm>
#include <cstdint>
#include <memory>

#include "hw/functions/functions.h"
#include "hw/ops/op.h"

namespace stepsim {

namespace {

// One group of tiles_per_expert tile indices per set selector bit (bit i stands for expert
// experts[i], or expert i when `experts` is empty), as scalars: a selector stream of shape
// [..] becomes [.., tiles_per_expert] for one-hot selectors.
class ExpertAddrGen : public Op {
 public:
  explicit ExpertAddrGen(const OpConfig& c) : Op(c) {
    tiles_ = c.params.get(param::kTilesPerExpert);
    experts_ = c.params.get(param::kExperts);
    base_ = c.params.get(param::kBase);
    stride_ = c.params.get(param::kIndexStride);
    if (tiles_ < 1 || uint64_t(tiles_) > kMaxStreamBeats)
      fail("tiles_per_expert is " + std::to_string(tiles_) + ", outside the allowed range 1.." +
           std::to_string(kMaxStreamBeats) + " (the addresses one selector bit becomes)");
    if (base_ < 0 || stride_ < 1) fail("base must be >= 0 and stride >= 1");
    int64_t last_expert = Selector::kMaxBits - 1;
    if (!experts_.empty()) last_expert = *std::max_element(experts_.begin(), experts_.end());
    for (int64_t e : experts_)
      if (e < 0) fail("experts entries must be >= 0");
    // The largest address, base + ((last_expert + 1) * tiles - 1) * stride, must fit in 64 bits.
    int64_t last = 0;
    if (__builtin_mul_overflow(last_expert + 1, tiles_, &last) || __builtin_mul_overflow(last - 1, stride_, &last) ||
        __builtin_add_overflow(last, base_, &last))
      fail("the tile addresses of expert " + std::to_string(last_expert) + " overflow 64 bits (base " +
           std::to_string(base_) + ", stride " + std::to_string(stride_) + ", tiles_per_expert " +
           std::to_string(tiles_) + ")");
  }

 protected:
  void run() override {
    for (;;) {
      Beat b = in(0).recv();
      if (!b.has_elem) {
        Beat o = b;
        if (o.stop) o.stop = stop_level(o.stop + 1);
        emit(0, o);
        if (b.done) break;
        continue;
      }
      if (!b.elem.is_selector()) fail("input carries " + b.elem.brief() + ", not a selector");
      const std::vector<int> bits = b.elem.selector().indices();
      const uint8_t close = stop_level(b.stop + 1);
      if (bits.empty()) {
        Beat o = Beat::bare_stop(close);
        o.done = b.done;
        emit(0, o);
      }
      for (size_t k = 0; k < bits.size(); ++k) {
        const int i = bits[k];
        if (!experts_.empty() && size_t(i) >= experts_.size())
          fail("selector bit " + std::to_string(i) + " has no entry in experts (" + std::to_string(experts_.size()) +
               " given)");
        const int64_t expert = experts_.empty() ? i : experts_[size_t(i)];
        const std::vector<int64_t> addr = expert_tile_addresses(expert, tiles_, base_, stride_);
        for (size_t j = 0; j < addr.size(); ++j) {
          const bool last = k + 1 == bits.size() && j + 1 == addr.size();
          Beat o = Beat::data(Element(Scalar{addr[j]}), last ? close : (j + 1 == addr.size() ? 1 : 0));
          o.done = last && b.done;
          emit(0, std::move(o));
          charge(1);
        }
      }
      if (b.done) break;
    }
  }

 private:
  int64_t tiles_, base_, stride_;
  std::vector<int64_t> experts_;
};

// KV-cache tile addresses of decode attention (the artifact's CacheReadAddrGen and
// FilterLastTile in one unit): for each request (an idx and a kv_len element), the
// ceil(kv_len / tile_rows) tile indices holding its tokens (a new innermost dimension), and
// beside them a one-hot selector per tile, {1} on the request's last tile (the one the new
// token is appended to and written back) and {0} on the others, and the number of valid
// tokens in each tile (tile_rows but in the last one) as an int32 [1x1] tile for mask_cols.
class KvCacheAddrGen : public Op {
 public:
  explicit KvCacheAddrGen(const OpConfig& c) : Op(c) {
    tile_rows_ = c.params.get(param::kTileRows);
    max_tiles_ = c.params.get(param::kMaxTiles);
    // A tile's valid-token count travels as an int32 [1x1] tile; a request's tiles are one
    // element's expansion.
    if (tile_rows_ < 1 || tile_rows_ > INT32_MAX)
      fail("tile_rows is " + std::to_string(tile_rows_) + ", outside the allowed range 1.." +
           std::to_string(INT32_MAX));
    if (max_tiles_ < 1 || uint64_t(max_tiles_) > kMaxStreamBeats)
      fail("max_tiles is " + std::to_string(max_tiles_) + ", outside the allowed range 1.." +
           std::to_string(kMaxStreamBeats));
  }

 protected:
  void run() override {
    for (uint64_t beats = 0;; ++beats) {
      Beat id = in(0).recv();
      Beat len = in(1).recv();
      if (id.has_elem != len.has_elem || id.stop != len.stop || id.done != len.done)
        fail("idx and kv_len streams differ in structure after " + std::to_string(beats) + " beats: idx has " +
             beat_text(id) + ", kv_len has " + beat_text(len));
      if (!id.has_elem) {
        Beat o = id;
        if (o.stop) o.stop = stop_level(o.stop + 1);
        emit(0, o);
        emit(1, o);
        emit(2, o);
        if (id.done) break;
        continue;
      }
      const int64_t r = index_value(id.elem).value_or(-1), n = index_value(len.elem).value_or(-1);
      if (r < 0 || n < 0) fail("idx " + id.elem.brief() + " / kv_len " + len.elem.brief() + " are not scalars >= 0");
      // Checked here, without overflow, before anything is sized from them.
      const int64_t tiles = n / tile_rows_ + (n % tile_rows_ != 0);
      if (tiles > max_tiles_)
        fail("kv_len " + std::to_string(n) + " (request " + std::to_string(r) + ") needs " + std::to_string(tiles) +
             " tiles of " + std::to_string(tile_rows_) + " tokens, more than max_tiles " + std::to_string(max_tiles_) +
             ": the limit is " + std::to_string(max_tiles_ * tile_rows_) + " tokens per request");
      if (r > (INT64_MAX - max_tiles_) / max_tiles_)
        fail("request index " + std::to_string(r) +
             " is too large: its tile addresses r * max_tiles + t overflow 64 bits");
      std::vector<int64_t> addr;
      try {
        addr = kv_cache_tile_addresses(r, n, tile_rows_, max_tiles_);
      } catch (const std::invalid_argument& e) {
        fail(e.what());
      }
      const uint8_t close = stop_level(id.stop + 1);
      if (addr.empty()) {
        Beat o = Beat::bare_stop(close);
        o.done = id.done;
        emit(0, o);
        emit(1, o);
        emit(2, o);
      }
      for (size_t t = 0; t < addr.size(); ++t) {
        const bool last = t + 1 == addr.size();
        Beat a = Beat::data(Element(Scalar{addr[t]}), last ? close : 0);
        Beat s = Beat::data(Element(Selector::one_hot(last ? 1 : 0)), last ? close : 0);
        const int64_t valid = last ? n - int64_t(t) * tile_rows_ : tile_rows_;
        Tile vt = functional() ? address_tiles({valid})[0] : Tile{};
        if (!functional()) vt.rows = vt.cols = 1, vt.dtype = DType::INT32;
        Beat c = Beat::data(Element(vt), last ? close : 0);
        a.done = s.done = c.done = last && id.done;
        emit(0, std::move(a));
        emit(1, std::move(s));
        emit(2, std::move(c));
        charge(1);
      }
      if (id.done) break;
    }
  }

 private:
  int64_t tile_rows_, max_tiles_;
};

}  // namespace

void register_address_ops(OpRegistry& r) {
  r.add(OpInfo{OpKind::kExpertAddrGen,
               "ExpertAddrGen",
               OpCategory::kAddressGeneration,
               "Turns each selector into the weight-tile indices of the selected expert(s): tiles_per_expert "
               "indices base + (e*tiles_per_expert + j)*stride per set bit, as scalars (a new innermost dimension; the "
               "reference adds a size-1 dimension per address, docs/semantics.md).",
               "One address per cycle.",
               {{"in", "selectors (e.g. EagerMerge's sel)"}},
               {{"out", "tile indices for RandomOffChipLoad: [sel dims.., tiles_per_expert] for one-hot selectors"}},
               {param_spec(param::kTilesPerExpert, "", "tiles of one expert's weight, in the order it consumes them",
                           true, kPositiveRange),
                param_spec(param::kExperts, "[]", "expert id of each selector bit (empty = bit i is expert i)", false,
                           {0, Selector::kMaxBits - 1}),
                param_spec(param::kBase, "0", "first tile index of the tensor region"),
                param_spec(param::kIndexStride, "1", "index step per tile", false, kPositiveRange)},
               false,
               [](const OpConfig& c) { return std::make_unique<ExpertAddrGen>(c); }});
  r.add(OpInfo{
      OpKind::kKvCacheAddrGen,
      "KvCacheAddrGen",
      OpCategory::kAddressGeneration,
      "Per request (idx, kv_len): the ceil(kv_len / tile_rows) KV-cache tile indices idx*max_tiles + t as "
      "scalars (a new innermost dimension), a selector per tile, {1} on the last tile, {0} otherwise, and "
      "the tokens each tile holds.",
      "One address per cycle.",
      {{"idx", "request indices (scalars)"}, {"kv_len", "KV lengths in tokens, the new token included (scalars)"}},
      {{"addr", "tile indices for RandomOffChipLoad/Store: [.., tiles]"},
       {"last", "one-hot selectors: {1} on each request's last tile"},
       {"valid", "tokens held by each tile, int32 [1x1] (tile_rows, fewer in the last tile; for mask_cols)"}},
      {param_spec(param::kTileRows, "", "tokens per KV tile", true, kPositiveRange),
       param_spec(param::kMaxTiles, "", "tile slots per request in the cache tensor", true, kPositiveRange)},
      false,
      [](const OpConfig& c) { return std::make_unique<KvCacheAddrGen>(c); }});
}

}  // namespace stepsim
