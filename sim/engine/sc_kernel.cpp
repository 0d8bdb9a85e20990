#include "sim/engine/sc_kernel.h"

#include <systemc>

namespace stepsim {

// Kept reachable here and never destroyed (not even at exit: no destructor runs under a
// suspended thread).
void ScKernel::keep_forever(const void* object) {
  static auto* kept = new std::vector<const void*>;
  if (object) kept->push_back(object);
}

ScKernel::ScKernel() {
  // The current kernel, if one was left behind (or SystemC made its default one), stays.
  keep_forever(sc_core::sc_curr_simcontext);
  context_ = new sc_core::sc_simcontext();
  sc_core::sc_curr_simcontext = context_;
  sc_core::sc_default_global_context = context_;
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
}

ScKernel::~ScKernel() {
  if (left_behind_) return;  // the next kernel keeps it reachable
  delete context_;
  sc_core::sc_curr_simcontext = nullptr;
  sc_core::sc_default_global_context = nullptr;
}

void ScKernel::fresh_forever() {
  auto* kernel = new ScKernel();
  kernel->leave_behind();
  keep_forever(kernel);
}

}  // namespace stepsim
