// impl: rtl — graph nodes on the Verilated SystemVerilog units of rtl/ (built only with
// Verilator: STEPSIM_RTL). Same bridges as impl: hls; the units are drop-in replacements. The
// bridges over the Verilated units and their routes are generated from rtl/units.list
// (rtl/units.cmake: rtl_<Kind>.cpp, rtl_routes.cpp).
#include "hw/bridge/unit_bridge.h"

namespace stepsim::bridge {

UnitImpl rtl_unit_impl();  // rtl_routes.cpp, generated

void register_rtl_units() {
  UnitImpl impl = rtl_unit_impl();
#ifndef STEPSIM_HAVE_RTL_T16
  impl.tile_sides = {4};  // STEPSIM_RTL_T16=OFF: no Verilated [r x 16] tile units
#endif
  register_unit_impl(std::move(impl));
}

}  // namespace stepsim::bridge
