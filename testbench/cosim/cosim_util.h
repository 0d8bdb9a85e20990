// Shared by the co-simulation tests: whether the Verilated units are built (and registered).
#pragma once

#include "hw/bridge/unit_bridge.h"

namespace stepsim {

// True when the build has the Verilated units (STEPSIM_RTL); registers their bridges once.
inline bool have_rtl() {
#ifdef STEPSIM_HAVE_RTL
  static bool once = [] {
    bridge::register_rtl_units();
    return true;
  }();
  return once;
#else
  return false;
#endif
}

}  // namespace stepsim
