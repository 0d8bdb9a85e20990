// The C++ side of the Python package `stepsim` (scripts/python/stepsim): a thin binding of the graph
// builder, the registries and the run, in pybind11. The package's Python code generates the
// per-operator methods from the registry these functions expose (no list of operators here).
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace stepsim::python {

// A run that ended in an error (a deadlock, an operator's error): Python's SimulationError.
struct RunFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void bind_errors(pybind11::module_& m);    // exceptions carrying the command line's messages
void bind_registry(pybind11::module_& m);  // operators, tile functions, presets, layers
void bind_graph(pybind11::module_& m);     // the graph builder and its streams
void bind_run(pybind11::module_& m);       // runs, analysis
void bind_sweep(pybind11::module_& m);     // grid sweeps point by point (stepsim.pool.workers)
void bind_metrics(pybind11::module_& m);   // the metric table and a report's values

// A Python value (a dict, list, number, ... or JSON text) as JSON, and back (through Python's json
// module: numbers keep their exact value both ways).
nlohmann::json json_of(const pybind11::object& value);
pybind11::object python_of(const nlohmann::json& value);

}  // namespace stepsim::python
