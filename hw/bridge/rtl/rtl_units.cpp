// impl: rtl — graph nodes on the Verilated SystemVerilog units of rtl/ (built only with
// Verilator: STEPSIM_RTL). Same bridges as impl: hls; the units are drop-in replacements.
#include "Vag_offchip.h"
#include "Vpcu_accum.h"
#include "Vpcu_ew.h"
#include "Vpcu_reduce.h"
#include "Vpcu_retile.h"
#include "Vpcu_tile_accum.h"
#include "Vpcu_tile_map.h"
#include "Vpmu_buffer_cosim.h"
#include "Vrouter_broadcast.h"
#include "Vrouter_eager_merge.h"
#include "Vrouter_partition.h"
#include "Vrouter_partition8.h"
#include "Vrouter_reassemble.h"
#include "Vrouter_reassemble8.h"
#include "Vshape_expand.h"
#include "Vshape_flatten.h"
#include "Vshape_promote.h"
#include "Vshape_repeat.h"
#include "Vshape_reshape.h"
#include "Vshape_zip.h"
#include "hw/bridge/unit_bridges.h"
#ifdef STEPSIM_HAVE_RTL_T16
#include "Vag_offchip_t16.h"
#include "Vpcu_retile_t16.h"
#include "Vpcu_tile_accum_t16.h"
#include "Vpcu_tile_map_t16.h"
#endif

namespace stepsim::bridge {

struct RtlUnits {
  using Flatten = Vshape_flatten;
  using Promote = Vshape_promote;
  using Repeat = Vshape_repeat;
  using Expand = Vshape_expand;
  using Reshape = Vshape_reshape;
  using Zip = Vshape_zip;
  using Broadcast = Vrouter_broadcast;
  using Partition = Vrouter_partition;
  using Reassemble = Vrouter_reassemble;
  using Partition8 = Vrouter_partition8;  // N = 8 (rtl/CMakeLists.txt)
  using Reassemble8 = Vrouter_reassemble8;
  using EagerMerge = Vrouter_eager_merge;
  using PcuEw = Vpcu_ew;
  using PcuAccum = Vpcu_accum;
  using PcuReduce = Vpcu_reduce;
  using Pmu = Vpmu_buffer_cosim;  // the co-simulation configuration (rtl/CMakeLists.txt)
  using PcuTileMap = Vpcu_tile_map;
  using PcuTileAccum = Vpcu_tile_accum;
#ifdef STEPSIM_HAVE_RTL_T16
  using PcuTileMap16 = Vpcu_tile_map_t16;
  using PcuTileAccum16 = Vpcu_tile_accum_t16;
  using Ag16 = Vag_offchip_t16;
  using Retile16 = Vpcu_retile_t16;
#else  // built without the T = 16 library (STEPSIM_RTL_T16=OFF): [16 x 16] tiles stay unsupported
  using PcuTileMap16 = void;
  using PcuTileAccum16 = void;
  using Ag16 = void;
  using Retile16 = void;
#endif
  using Retile = Vpcu_retile;
  using Ag = Vag_offchip;
};

void register_rtl_units() {
  register_unit_impl(
      UnitImpl{"rtl", unit_unsupported, [](const OpConfig& cfg) { return create_unit_bridge<RtlUnits>(cfg, "rtl"); }});
}

}  // namespace stepsim::bridge
