// Grid sweeps point by point, for stepsim.pool.workers: a worker runs one point of the command line's
// sweep (scripts/cli/sweep.h), the coordinator prints the merged rows in the command line's table.
#include <pybind11/stl.h>

#include <sstream>

#include "scripts/cli/sweep.h"
#include "scripts/python/bindings.h"
#include "sim/report/metrics.h"

namespace py = pybind11;

namespace stepsim::python {
namespace {

using Axes = std::vector<std::pair<std::string, std::vector<std::string>>>;

SweepSpec make_spec(const std::string& graph_file, const std::string& layer, const std::string& preset,
                    const Axes& params, const Axes& sets, const std::string& tech) {
  SweepSpec spec;
  spec.graph_file = graph_file;
  spec.layer = layer;
  spec.preset = preset;
  spec.tech = tech;
  spec.params = params;
  spec.sets = sets;
  return spec;
}

// A row as a dict: values, ok, ran, status, wall_s, and metrics {name: value} in the metric table's
// order (empty when the point did not run; None where the report gives no value).
py::dict row_dict(const SweepRow& r) {
  py::dict d;
  d["values"] = r.values;
  d["ok"] = r.ok;
  d["ran"] = r.ran;
  d["status"] = r.status;
  py::dict metrics;
  for (size_t k = 0; k < r.metrics.size(); ++k) metrics[py::str(metric_table()[k].name)] = python_of(r.metrics[k]);
  d["metrics"] = metrics;
  d["wall_s"] = r.wall_s;
  return d;
}

// The inverse of row_dict. A row without `metrics` (a point whose worker died) did not run.
SweepRow row_from(const py::dict& d) {
  SweepRow r;
  r.values = d["values"].cast<std::vector<std::string>>();
  r.ok = d["ok"].cast<bool>();
  r.ran = d["ran"].cast<bool>();
  r.status = d["status"].cast<std::string>();
  r.wall_s = d["wall_s"].cast<double>();
  if (r.ran) {
    const nlohmann::json metrics = json_of(d["metrics"]);
    for (const Metric& m : metric_table()) r.metrics.push_back(metrics.value(m.name, nlohmann::json()));
  }
  return r;
}

// The table and the CSV of `rows` (dicts of row_dict), as `stepsim sweep` prints and writes them.
std::pair<std::string, std::string> format(const SweepSpec& spec, const std::vector<py::dict>& rows) {
  const SweepResult table = sweep_table(spec);
  std::ostringstream text, csv;
  print_sweep_header(table, text);
  write_sweep_csv_header(table, csv);
  for (const py::dict& d : rows) {
    const SweepRow r = row_from(d);
    print_sweep_row(table, r, text);
    write_sweep_csv_row(r, csv);
  }
  return {text.str(), csv.str()};
}

}  // namespace

void bind_sweep(py::module_& m) {
  m.def("split_values", &split_values, py::arg("text"),
        "\"8,16,[1,2]\" -> [\"8\", \"16\", \"[1,2]\"], as `stepsim sweep` splits a value list");
  m.def(
      "sweep_size",
      [](const std::string& graph_file, const std::string& layer, const std::string& preset, const Axes& params,
         const Axes& sets, const std::string& tech) {
        const SweepSpec spec = make_spec(graph_file, layer, preset, params, sets, tech);
        sweep_table(spec);  // the spec's errors, before any point runs
        return sweep_size(spec);
      },
      py::arg("graph_file"), py::arg("layer"), py::arg("preset"), py::arg("params"), py::arg("sets"),
      py::arg("tech") = kDefaultTechnology, "the number of points of a `stepsim sweep` spec (checks the spec)");
  m.def(
      "sweep_point",
      [](const std::string& graph_file, const std::string& layer, const std::string& preset, const Axes& params,
         const Axes& sets, size_t index, const std::string& tech) {
        return row_dict(run_sweep_point(make_spec(graph_file, layer, preset, params, sets, tech), index));
      },
      py::arg("graph_file"), py::arg("layer"), py::arg("preset"), py::arg("params"), py::arg("sets"), py::arg("index"),
      py::arg("tech") = kDefaultTechnology,
      "one point of a sweep, as a row dict");
  m.def(
      "sweep_format",
      [](const std::string& graph_file, const std::string& layer, const std::string& preset, const Axes& params,
         const Axes& sets, const std::vector<py::dict>& rows, const std::string& tech) {
        return format(make_spec(graph_file, layer, preset, params, sets, tech), rows);
      },
      py::arg("graph_file"), py::arg("layer"), py::arg("preset"), py::arg("params"), py::arg("sets"), py::arg("rows"),
      py::arg("tech") = kDefaultTechnology,
      "(table text, CSV text) of sweep rows, as `stepsim sweep` prints them");
}

}  // namespace stepsim::python
