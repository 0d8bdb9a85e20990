// Address generators that turn routing metadata into tile addresses for RandomOffChipLoad (the
// artifact's ExpertAddrGen, step-paper-notes §2.6): a time-multiplexed region fetches the
// weights of whichever expert EagerMerge just selected.
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
    tiles_ = c.params.get_int("tiles_per_expert");
    experts_ = c.params.get_ints("experts");
    base_ = c.params.get_int("base");
    stride_ = c.params.get_int("stride");
    if (tiles_ < 1) fail("tiles_per_expert must be >= 1");
    if (base_ < 0 || stride_ < 1) fail("base must be >= 0 and stride >= 1");
    for (int64_t e : experts_)
      if (e < 0) fail("experts entries must be >= 0");
  }

 protected:
  void run() override {
    for (;;) {
      Beat b = in(0).recv();
      if (!b.has_elem) {
        Beat o = b;
        if (o.stop) o.stop = uint8_t(o.stop + 1);
        emit(0, o);
        if (b.done) break;
        continue;
      }
      if (!b.elem.is_selector()) fail("input carries " + b.elem.to_string() + ", not a selector");
      const std::vector<int> bits = b.elem.selector().indices();
      const uint8_t close = uint8_t(b.stop ? b.stop + 1 : 1);
      if (bits.empty()) {
        Beat o = Beat::bare_stop(close);
        o.done = b.done;
        emit(0, o);
      }
      for (size_t k = 0; k < bits.size(); ++k) {
        const int i = bits[k];
        if (!experts_.empty() && size_t(i) >= experts_.size())
          fail("selector bit " + std::to_string(i) + " has no entry in experts (" + std::to_string(experts_.size()) + " given)");
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

}  // namespace

void register_address_ops(OpRegistry& r) {
  using T = ParamSpec::Type;
  r.add(OpInfo{"ExpertAddrGen", "address generation",
               "Turns each selector into the weight-tile indices of the selected expert(s): tiles_per_expert "
               "indices base + (e*tiles_per_expert + j)*stride per set bit, as scalars (a new innermost dimension).",
               "One address per cycle.",
               {{"in", "selectors (e.g. EagerMerge's sel)"}},
               {{"out", "tile indices for RandomOffChipLoad: [sel dims.., tiles_per_expert] for one-hot selectors"}},
               {{"tiles_per_expert", T::kInt, "", "tiles of one expert's weight, in the order it consumes them", true},
                {"experts", T::kIntList, "[]", "expert id of each selector bit (empty = bit i is expert i)"},
                {"base", T::kInt, "0", "first tile index of the tensor region"},
                {"stride", T::kInt, "1", "index step per tile"}},
               false, [](const OpConfig& c) { return std::make_unique<ExpertAddrGen>(c); }});
}

}  // namespace stepsim
