// C++ errors as Python exceptions. Every message is the one the command line prints after
// "error: ", so a user reads the same words from either.
#include <filesystem>
#include <stdexcept>

#include "scripts/python/bindings.h"
#include "sim/shape/infer.h"

namespace py = pybind11;

namespace stepsim::python {

void bind_errors(py::module_& m) {
  // Error: any rejected input (a ValueError); ShapeError: a shape inference error naming both ends.
  static py::exception<std::invalid_argument> error(m, "Error", PyExc_ValueError);
  static py::exception<shape::ShapeError> shape_error(m, "ShapeError", error.ptr());
  static py::exception<std::runtime_error> sim_error(m, "SimulationError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const RunFailed& e) {
      sim_error(e.what());
    } catch (const shape::ShapeError& e) {
      shape_error(e.what());
    } catch (const std::invalid_argument& e) {
      error(e.what());
    } catch (const std::out_of_range& e) {
      error(e.what());
    } catch (const std::filesystem::filesystem_error& e) {
      error(e.what());  // a path the system refused (too long, a loop): it names the path
    }
  });
}

}  // namespace stepsim::python
