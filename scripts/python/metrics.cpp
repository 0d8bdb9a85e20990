// The metric table (sim/report/metrics.h) for Python: its rows and a report's values, so that
// stepsim.sweep, the DSE's objectives and constraints and the plots name and compute every figure
// as `stepsim sweep` does.
#include <pybind11/stl.h>

#include <cmath>
#include <limits>

#include "scripts/python/bindings.h"
#include "sim/report/metrics.h"

namespace py = pybind11;

namespace stepsim::python {

namespace {

py::list flag_list(unsigned flags) {
  py::list out;
  if (flags & kNeedsFit) out.append("needs_fit");
  if (flags & kNeedsClock) out.append("needs_clock");
  if (flags & kSweepTable) out.append("sweep_table");
  return out;
}

py::list metric_table_rows() {
  py::list out;
  for (const Metric& m : metric_table()) {
    py::dict d;
    d["name"] = m.name;
    d["unit"] = m.unit;
    d["doc"] = m.doc;
    d["flags"] = flag_list(m.flags);
    d["header"] = metric_header(m);
    d["aliases"] = m.aliases;
    out.append(d);
  }
  return out;
}

// {name: value} in the table's order; NaN where the report cannot give a value.
py::dict values(const py::object& report, std::optional<double> clock_ghz) {
  const std::vector<nlohmann::json> v = metric_values(json_of(report), clock_ghz);
  py::dict out;
  for (size_t k = 0; k < v.size(); ++k)
    out[py::str(metric_table()[k].name)] =
        v[k].is_null() ? py::float_(std::numeric_limits<double>::quiet_NaN()) : python_of(v[k]);
  return out;
}

}  // namespace

nlohmann::json json_of(const py::object& value) {
  // allow_nan=False: NaN has no JSON spelling; Python's ValueError names it.
  const std::string text =
      py::isinstance<py::str>(value)
          ? value.cast<std::string>()
          : py::module_::import("json").attr("dumps")(value, py::arg("allow_nan") = false).cast<std::string>();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(std::string("not JSON: ") + e.what());
  }
}

py::object python_of(const nlohmann::json& value) {
  if (value.is_null()) return py::none();
  return py::module_::import("json").attr("loads")(value.dump());
}

void bind_metrics(py::module_& m) {
  m.def("metric_table", &metric_table_rows,
        "every metric (docs/metrics.md): dicts of name, unit, doc, flags (needs_fit, needs_clock, sweep_table), "
        "header (\"name [unit]\", the sweep's column) and aliases (former names)");
  m.def("metric_values", &values, py::arg("report"), py::arg("clock_ghz") = py::none(),
        "every metric of a run's report (the dict of Result.report, or its JSON text), {name: value} in the "
        "table's order; NaN where the report cannot give one (time_us without clock_ghz, onchip_static_bytes "
        "without a symbolic value)");
}

}  // namespace stepsim::python
