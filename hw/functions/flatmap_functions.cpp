// FlatMap functions and filter_padding (see functions.h).
#include <map>

#include "hw/functions/detail.h"
#include "hw/functions/functions.h"

namespace stepsim {

namespace {

using detail::check_arity;
using detail::fail;
using detail::payload_mode;

const std::string kFlat = "flatmap";

// Row r (as [1xC]) or column c (as [Rx1]) of x; shape-only if x has no payload.
Tile slice(const Tile& x, bool row, uint32_t k) {
  Tile t = row ? shape_tile(1, x.cols, x.dtype) : shape_tile(x.rows, 1, x.dtype);
  if (!x.has_data()) return t;
  auto d = std::make_shared<TileData>();
  auto copy = [&](auto& out, const auto& in) {
    if (row) {
      out.assign(in.begin() + size_t(k) * x.cols, in.begin() + size_t(k + 1) * x.cols);
    } else {
      out.resize(x.rows);
      for (uint32_t r = 0; r < x.rows; ++r) out[r] = in[size_t(r) * x.cols + k];
    }
  };
  if (x.dtype == DType::INT32)
    copy(d->i, x.data->i);
  else
    copy(d->f, x.data->f);
  t.data = std::move(d);
  return t;
}

std::vector<Tile> split(const Tile& x, bool row) {
  std::vector<Tile> out;
  const uint32_t n = row ? x.rows : x.cols;
  out.reserve(n);
  for (uint32_t k = 0; k < n; ++k) out.push_back(slice(x, row, k));
  return out;
}

// The int32 control tile's values, checked against the expected count.
const std::vector<int32_t>& mask_values(const std::string& name, const Tile& x, const Tile& mask, uint32_t n) {
  if (mask.dtype != DType::INT32) fail(kFlat, name, "control tile must be int32, got " + mask.to_string());
  if (mask.elems() != n || (mask.rows != 1 && mask.cols != 1))
    fail(kFlat, name,
         "control tile " + mask.to_string() + " does not match " + x.to_string() + " (expects " + std::to_string(n) +
             " flags as [" + std::to_string(n) + "x1] or [1x" + std::to_string(n) + "])");
  if (!mask.has_data())
    fail(kFlat, name, "control tile " + mask.to_string() + " needs its payload, also in timing mode");
  return mask.data->i;
}

FlatMapFunction make_flat(const std::string& name, const std::string& desc, int arity,
                          FlatMapFunction::Expansion expansion,
                          std::function<std::vector<Tile>(const std::vector<Tile>&)> fn) {
  FlatMapFunction f;
  f.name = name;
  f.description = desc;
  f.arity = arity;
  f.expansion = expansion;
  f.flops = [name, arity](const std::vector<Tile>& in) {
    check_arity(kFlat, name, arity, in);
    return uint64_t(0);
  };
  f.out_shapes = [name, arity, fn](const std::vector<Tile>& in) {
    check_arity(kFlat, name, arity, in);
    std::vector<Tile> shaped = in;
    shaped[0].data = nullptr;  // the control tile keeps its payload
    return fn(shaped);
  };
  f.apply = [name, arity, fn](const std::vector<Tile>& in) {
    check_arity(kFlat, name, arity, in);
    return fn(in);
  };
  return f;
}

std::map<std::string, FlatMapFunction> build() {
  std::map<std::string, FlatMapFunction> m;
  // `lanes`: the units that compute the function bit for bit (none by default).
  auto add = [&m](FlatMapFunction f, UnitLanes lanes = {}) { detail::register_function(m, std::move(f), lanes); };
  using E = FlatMapFunction::Expansion;
  add(make_flat("retile_streamify_row", "[RxC] -> R tiles [1xC]; 0 FLOPs", 1, E::kRows,
                [](const std::vector<Tile>& in) { return split(in[0], true); }),
      {UnitOp::kRetileRows, VectorLanes::kNone, true});
  add(make_flat("retile_streamify_col", "[RxC] -> C tiles [Rx1]; 0 FLOPs", 1, E::kCols,
                [](const std::vector<Tile>& in) { return split(in[0], false); }));
  const std::string rf = "retile_streamify_row_filter";
  add(make_flat(rf,
                "(x[RxC], int32 mask [Rx1]/[1xR]) -> rows with mask 0 as [1xC] tiles "
                "(nonzero = padding, dropped); 0 FLOPs",
                2, E::kFilteredRows, [rf](const std::vector<Tile>& in) {
                  const Tile& x = in[0];
                  const auto& mask = mask_values(rf, x, in[1], x.rows);
                  std::vector<Tile> out;
                  for (uint32_t r = 0; r < x.rows; ++r)
                    if (mask[r] == 0) out.push_back(slice(x, true, r));
                  return out;
                }));
  const std::string fp = "filter_padding";
  add(make_flat(fp, "(x, int32 flag [1x1]) -> {x} if flag == 0 else {}; 0 FLOPs", 2, E::kFiltered,
                [fp](const std::vector<Tile>& in) {
                  const auto& flag = mask_values(fp, in[0], in[1], 1);
                  return flag[0] == 0 ? std::vector<Tile>{in[0]} : std::vector<Tile>{};
                }));
  return m;
}

const std::map<std::string, FlatMapFunction>& registry() {
  static const std::map<std::string, FlatMapFunction> r = build();
  return r;
}

}  // namespace

const FlatMapFunction& flatmap_function(const std::string& name) {
  const auto& r = registry();
  auto it = r.find(name);
  if (it == r.end()) {
    std::string known;
    for (const auto& [k, v] : r) known += (known.empty() ? "" : ", ") + k;
    throw std::invalid_argument("unknown flatmap function '" + name + "'; known: " + known);
  }
  return it->second;
}

std::vector<std::string> flatmap_function_names() {
  std::vector<std::string> v;
  for (const auto& [k, f] : registry()) v.push_back(k);
  return v;
}

std::vector<Tile> filter_padding(const std::vector<Tile>& tiles, const std::vector<bool>& is_padding) {
  if (tiles.size() != is_padding.size())
    throw std::invalid_argument("filter_padding: " + std::to_string(tiles.size()) + " tiles but " +
                                std::to_string(is_padding.size()) + " flags");
  std::vector<Tile> out;
  for (size_t k = 0; k < tiles.size(); ++k)
    if (!is_padding[k]) out.push_back(tiles[k]);
  return out;
}

}  // namespace stepsim
