// The extension module `stepsim._stepsim` (the package in scripts/python/stepsim wraps it).
#include "hw/bridge/unit_bridge.h"
#include "scripts/python/bindings.h"

PYBIND11_MODULE(_stepsim, m) {
  m.doc() = "stepsim's simulator core: graph builder, registries and runs (use the `stepsim` package)";
  stepsim::python::bind_errors(m);
  stepsim::python::bind_registry(m);
  stepsim::python::bind_graph(m);
  stepsim::python::bind_run(m);
  stepsim::python::bind_sweep(m);
  stepsim::python::bind_metrics(m);
#ifdef STEPSIM_HAVE_RTL
  stepsim::bridge::register_rtl_units();  // impl: rtl (the Verilated units), as the command line
  m.attr("have_rtl") = true;
#else
  m.attr("have_rtl") = false;
#endif
}
