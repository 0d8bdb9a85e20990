// Down-tiling before a co-simulation (sim/transform/downtile.h, downtile_for_units): the side T chosen by
// the nodes each candidate puts on the units (the implementation policy over the static check).
#include <stdexcept>

#include "sim/engine/impl_policy.h"
#include "sim/engine/plan.h"
#include "sim/engine/validate.h"
#include "sim/transform/downtile.h"

namespace stepsim {

namespace {

// The linear off-chip nodes the address generator would take (its main rule, ag_bridge.cpp
// ag_setup, which needs the run's memory: [r x 4] or [r x 16] tiles of a bf16 tensor, r <= the
// side; [r x 16] at par_dispatch 4).
size_t offchip_on_units(const Graph& g, const HardwareParams& hw) {
  size_t on = 0;
  for (const NodeSpec& n : g.nodes) {
    if (!n.is(OpKind::kLinearOffChipLoad) && !n.is(OpKind::kLinearOffChipStore)) continue;
    const std::vector<int64_t> tile = param_of(n, param::kTile);
    const std::string tensor = param_of(n, param::kTensor);
    const TensorSpec* t = nullptr;
    for (const TensorSpec& x : g.tensors)
      if (x.name == tensor) t = &x;
    if (!t || t->dtype != DType::BF16 || tile.size() != 2 || (tile[1] != 4 && tile[1] != 16) || tile[0] < 1 ||
        tile[0] > tile[1])
      continue;
    const int64_t pd = param_of(n, param::kParDispatch);
    if (tile[1] == 16 && (pd > 0 ? pd : int64_t(hw.par_dispatch)) != 4) continue;
    ++on;
  }
  return on;
}

// Nodes of the down-tiled graph the units of `impl` would run (0 when it does not plan or type).
size_t on_units(const Graph& g, const std::string& impl, const HardwareParams& hw) {
  try {
    const Plan plan = plan_graph(g, hw);
    const std::shared_ptr<const StaticCheck> check = check_before_run(g);
    // (the off-chip nodes need the run's memory to be asked: counted apart)
    return nodes_on_units(plan, impl, check.get()) + offchip_on_units(g, hw);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

DowntileResult downtile_for_units(const Graph& g, const std::string& spec, const std::string& impl,
                                  const HardwareParams& hw) {
  DowntileOptions o;
  o.partial = true;
  o.fifo_depth = hw.fifo_depth;
  if (spec != "auto") {
    int64_t t = 0;
    size_t used = 0;
    try {
      t = std::stoll(spec, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != spec.size() || t < 1 || t > 65536)
      throw std::invalid_argument("downtile: '" + spec + "' is neither a tile side 1..65536 nor auto");
    return downtile_graph(g, t, o);
  }
  const std::string unit_impl = impl.empty() || impl == "approx" ? "hls" : impl;
  std::vector<int> sides{16, 4};
  if (const bridge::UnitImpl* u = bridge::find_unit_impl(unit_impl)) {
    sides.assign(u->tile_sides.rbegin(), u->tile_sides.rend());  // the larger first
  }
  DowntileResult best;
  size_t best_on = 0;
  bool have = false;
  for (int t : sides) {
    DowntileResult d = downtile_graph(g, t, o);
    const size_t on = on_units(d.graph, unit_impl, hw);
    if (!have || on > best_on) {
      best = std::move(d);
      best_on = on;
      have = true;
    }
  }
  return best;
}

}  // namespace stepsim
