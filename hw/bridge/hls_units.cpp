// impl: hls — graph nodes on the HLS-synthesizable SystemC units of hw/units.
#include "hw/bridge/unit_bridges.h"
#include "hw/units/ag_offchip.h"
#include "hw/units/pcu_accum.h"
#include "hw/units/pcu_ew.h"
#include "hw/units/pcu_reduce.h"
#include "hw/units/pcu_retile.h"
#include "hw/units/pcu_tile_accum.h"
#include "hw/units/pcu_tile_map.h"
#include "hw/units/pmu_buffer.h"
#include "hw/units/router_broadcast.h"
#include "hw/units/router_eager_merge.h"
#include "hw/units/router_partition.h"
#include "hw/units/router_reassemble.h"
#include "hw/units/shape_expand.h"
#include "hw/units/shape_flatten.h"
#include "hw/units/shape_promote.h"
#include "hw/units/shape_repeat.h"
#include "hw/units/shape_reshape.h"
#include "hw/units/shape_zip.h"

namespace stepsim::bridge {

struct HlsUnits {
  using Flatten = units::ShapeFlatten<kW>;
  using Promote = units::ShapePromote<kW>;
  using Repeat = units::ShapeRepeat<kW, kCW>;
  using Expand = units::ShapeExpand<kW>;
  using Reshape = units::ShapeReshape<kW, kCW>;
  using Zip = units::ShapeZip<kZipN, kW>;
  using Broadcast = units::RouterBroadcast<kN, kW>;
  using Partition = units::RouterPartition<kN, kW>;
  using Reassemble = units::RouterReassemble<kN, kW>;
  using Partition8 = units::RouterPartition<kN8, kW>;
  using Reassemble8 = units::RouterReassemble<kN8, kW>;
  using EagerMerge = units::RouterEagerMerge<kN, kW>;
  using PcuEw = units::PcuEw<kL>;
  using PcuAccum = units::PcuAccum<kL>;
  using PcuReduce = units::PcuReduce<kL>;
  using Pmu = units::PmuBuffer<kW, kPmuBanks, kPmuDepth, kPmuNbuf, kPmuR, kCW, kPmuNA, kPmuVW>;
  using PcuTileMap = units::PcuTileMap<kT, kTS>;
  using PcuTileAccum = units::PcuTileAccum<kT, kTileAccumBank>;
  using PcuTileMap16 = units::PcuTileMap<kT16, kTS>;
  using PcuTileAccum16 = units::PcuTileAccum<kT16, kTileAccumBank16>;
  using Retile = units::PcuRetile<kT>;
  using Retile16 = units::PcuRetile<kT16>;
  using Ag = units::AgOffchip<kT, kAgMR, kAgIW, kAgAW, kAgMaxo>;
  using Ag16 = units::AgOffchip<kT16, kAgMR, kAgIW, kAgAW, kAgMaxo, kAgP16>;
};

UnitImpl hls_unit_impl() {
  return UnitImpl{"hls", unit_unsupported,
                  [](const OpConfig& cfg) { return create_unit_bridge<HlsUnits>(cfg, "hls"); }};
}

}  // namespace stepsim::bridge
