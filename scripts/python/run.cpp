// Runs and analysis from Python, through the command line's own code: the request is prepared by
// prepare_run (sim/engine/run_request.h), the run is simulate() or, when a node may run on a unit,
// cosimulate(), and the report is make_report's JSON: the same numbers `stepsim run --report`
// writes. NumPy arrays go in as tensors' initial values and come out as the stored tensors.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <limits>
#include <optional>
#include <sstream>

#include "scripts/python/bindings.h"
#include "sim/cosim/cosim.h"
#include "sim/engine/impl_policy.h"
#include "sim/engine/run_request.h"
#include "sim/frontend/builder.h"
#include "sim/graph/loader.h"
#include "sim/graph/validate.h"
#include "sim/report/analyze.h"
#include "sim/report/report.h"
#include "sim/transform/downtile.h"

namespace py = pybind11;

namespace stepsim::python {

namespace {

const TensorSpec& tensor_of(const Graph& g, const std::string& name) {
  for (const TensorSpec& t : g.tensors)
    if (t.name == name) return t;
  std::string known;
  for (const TensorSpec& t : g.tensors) known += (known.empty() ? "" : ", ") + t.name;
  throw std::invalid_argument("inputs: the graph has no tensor '" + name + "' (tensors: " + known + ")");
}

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t k = 0; k < a.ndim(); ++k) s += (k ? ", " : "") + std::to_string(a.shape(k));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// The first value of `v` outside int32 as "VALUE (element K", or "" when all fit.
template <class T>
std::string first_outside_int32(const py::array& a) {
  auto v = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(a);
  const T* p = v.data();
  const auto lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  for (py::ssize_t k = 0; k < v.size(); ++k)
    if ((std::is_signed<T>::value && int64_t(p[k]) < lo) || p[k] > T(hi))
      return std::to_string(p[k]) + " (element " + std::to_string(k);
  return "";
}

// An integer array as int32 values: every value must fit, as the command line reads an int64
// .npy (a wider value is refused, never wrapped).
std::vector<int32_t> int32_values(const TensorSpec& t, const py::array& a) {
  std::string outside;
  if (a.dtype().kind() == 'u' && a.itemsize() >= 4)
    outside = first_outside_int32<uint64_t>(a);
  else if (a.itemsize() > 4)
    outside = first_outside_int32<int64_t>(a);
  if (!outside.empty())
    throw std::invalid_argument("inputs['" + t.name + "']: value " + outside +
                                ", counting from 0, row-major) does not fit in int32 (-2147483648..2147483647) "
                                "of tensor '" + t.name + "'");
  auto v = py::array_t<int32_t, py::array::c_style | py::array::forcecast>::ensure(a);
  return std::vector<int32_t>(v.data(), v.data() + v.size());
}

// A NumPy array as the row-major values of tensor `t`: shape (rows, cols); a float array for
// bf16/fp32 (converted to float32; a bf16 tensor rounds each value to nearest even as it is
// stored), an integer array for int32.
TileData values_of(const TensorSpec& t, const py::array& a) {
  const std::string decl = "[" + std::to_string(t.rows) + " x " + std::to_string(t.cols) + "] " + dtype_name(t.dtype);
  if (a.ndim() != 2 || uint64_t(a.shape(0)) != t.rows || uint64_t(a.shape(1)) != t.cols)
    throw std::invalid_argument("inputs['" + t.name + "']: an array of shape " + shape_text(a) + " for tensor '" +
                                t.name + "' declared " + decl + " (shape (" + std::to_string(t.rows) + ", " +
                                std::to_string(t.cols) + "))");
  const char kind = a.dtype().kind();
  TileData d;
  if (t.dtype == DType::INT32) {
    if (kind != 'i' && kind != 'u')
      throw std::invalid_argument("inputs['" + t.name + "']: tensor declared " + decl + " needs an integer array, got " +
                                  std::string(py::str(a.dtype())));
    d.i = int32_values(t, a);
  } else {
    if (kind != 'f')
      throw std::invalid_argument("inputs['" + t.name + "']: tensor declared " + decl + " needs a float array, got " +
                                  std::string(py::str(a.dtype())));
    auto v = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
    d.f.assign(v.data(), v.data() + v.size());
  }
  return d;
}

py::array array_of(const TensorSpec& t, const TileData& d) {
  const std::vector<py::ssize_t> shape{py::ssize_t(t.rows), py::ssize_t(t.cols)};
  if (t.dtype == DType::INT32) return py::array_t<int32_t>(shape, d.i.data());
  return py::array_t<float>(shape, d.f.data());
}

struct RunArgs {
  RunRequest request;
  std::map<std::string, py::array> inputs;
  std::string cosim_dir;
  std::string downtile;  // "" = none, "auto" or a side (sim/transform/downtile.h, downtile_for_units)
};

// The down-tiling account as a list of dicts (Result.downtile, a DataFrame in Python).
py::list downtile_rows(const CosimReport& r) {
  py::list rows;
  for (const CosimDowntileRow& d : r.downtile) {
    py::dict row;
    row["node"] = d.node;
    row["op"] = d.op;
    row["fn"] = d.fn;
    row["conversion"] = d.conversion;
    row["down_tiled"] = d.blocked;
    row["nodes"] = d.nodes;
    row["on_units"] = d.on_units;
    row["units"] = d.units;
    row["why"] = d.kind;
    row["reason"] = d.reason;
    rows.append(row);
  }
  return rows;
}

py::dict run_result(const Graph& g, const SimResult& r, const Report& rep, double clock_ghz) {
  py::dict out;
  out["report"] = rep.json.dump();
  out["clock_ghz"] = clock_ghz;  // the run's clock: the metrics that need it (docs/metrics.md)
  std::ostringstream summary;
  print_summary(rep, summary);
  out["summary"] = summary.str();
  py::dict stored;
  for (const auto& [name, values] : r.stored) stored[py::str(name)] = array_of(tensor_of(g, name), values);
  out["stored"] = stored;
  return out;
}

py::dict run(const frontend::GraphBuilder& b, const RunArgs& args) {
  auto [opt, graph_sets] = prepare_run(args.request);
  Graph g = b.graph();
  apply_node_sets(g, graph_sets);
  check_graph(g);  // the loader's rules, as `stepsim run` of the graph's YAML (a .npy may be gone)
  opt.keep_stored = opt.functional;  // the stored tensors come back as arrays; no .npy is written
  for (const auto& [name, a] : args.inputs) opt.tensor_values[name] = values_of(tensor_of(g, name), a);
  const std::string impl = args.request.impl;
  std::optional<DowntileResult> downtiled;
  Graph logical;
  if (!args.downtile.empty()) {  // as `stepsim run --downtile`
    logical = g;
    downtiled = downtile_for_units(g, args.downtile, cosim_impl(g, impl), opt.hw);
    g = downtiled->graph;
  }
  if (!cosim_impl(g, impl).empty()) {
    if (impl.empty() && !g.impl.empty()) opt.default_impl = g.impl;
    CosimOptions co;
    co.impl = impl.empty() ? (g.impl.empty() ? "approx" : g.impl) : impl;
    co.dir = args.cosim_dir;
    if (downtiled) {
      co.downtile = &*downtiled;
      co.logical = &logical;
    }
    CosimReport cr;
    {
      py::gil_scoped_release release;
      cr = cosimulate(g, opt, co);
    }
    if (!cr.approx.ok) throw RunFailed(cr.approx.error);
    if (!cr.cosim.ok) throw RunFailed(cosim_failure(co, cr.cosim.error));
    py::dict out = run_result(g, cr.cosim, make_report(g, opt, cr), opt.hw.clock_ghz);
    std::ostringstream text;
    print_cosim_report(cr, text);
    out["cosim"] = text.str();
    out["equivalent"] = cr.equivalent;
    py::dict figures;  // the report's totals, as numbers
    figures["approx_cycles"] = cr.approx.cycles;
    figures["cosim_cycles"] = cr.cosim.cycles;
    figures["approx_wall_seconds"] = cr.approx.wall_seconds;
    figures["cosim_wall_seconds"] = cr.cosim.wall_seconds;
    figures["nodes_on_units"] = cr.bridged_nodes;
    figures["nodes"] = cr.nodes.size();
    figures["unit_clocks"] = cr.unit_clocks;
    if (cr.logical_compared) {
      figures["logical_cycles"] = cr.logical_cycles;
      figures["logical_wall_seconds"] = cr.logical_wall_seconds;
    }
    out["cosim_figures"] = figures;
    if (downtiled) {
      out["downtile"] = downtile_rows(cr);
      out["downtile_tile"] = downtiled->tile;
      std::ostringstream account;
      print_downtile_account(cr, account);
      out["downtile_text"] = account.str();
      if (cr.logical_compared) out["logical_identical"] = cr.logical_identical;
    }
    return out;
  }
  if (impl == "approx") g = all_approximate(std::move(g));
  SimResult r;
  {
    py::gil_scoped_release release;
    r = simulate(g, opt);
  }
  if (!r.ok) throw RunFailed(r.error);
  py::dict out = run_result(g, r, make_report(g, opt, r), opt.hw.clock_ghz);
  if (downtiled) out["downtile_tile"] = downtiled->tile;
  return out;
}

std::string analyze(const frontend::GraphBuilder& b, const std::string& model,
                    const std::map<std::string, std::string>& values) {
  check_graph(b.graph());
  for (const auto& [name, text] : values) {  // each checked alone, so that the error names its symbol
    try {
      shape::SymbolTable().parse(text);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("analyze: symbols['" + name + "']: " + e.what());
    }
  }
  Analysis a = analyze_graph(b.graph(), model, values);
  return analysis_json(b.graph(), a).dump();
}

}  // namespace

void bind_run(py::module_& m) {
  m.def(
      "run",
      [](const frontend::GraphBuilder& b, const std::string& preset, const KeyValueList& sets, const std::string& mode,
         const std::string& impl, uint64_t shuffle, const std::map<std::string, py::array>& inputs,
         const std::string& cosim_dir, const std::string& downtile, const std::string& tech) {
        RunArgs a;
        a.request = RunRequest{preset, sets, mode, impl, shuffle, tech};
        a.inputs = inputs;
        a.cosim_dir = cosim_dir;
        a.downtile = downtile;
        return run(b, a);
      },
      py::arg("graph"), py::arg("preset"), py::arg("sets"), py::arg("mode"), py::arg("impl"), py::arg("shuffle"),
      py::arg("inputs"), py::arg("cosim_dir"), py::arg("downtile") = "", py::arg("tech") = kDefaultTechnology,
      "run a graph (tech: the technology table of the energy and area); returns the report (JSON text), the summary and the stored tensors");
  m.def("analyze", &analyze, py::arg("graph"), py::arg("model"), py::arg("values"),
        "shape inference and the symbolic metrics (JSON text, as `stepsim analyze --json`)");
}

}  // namespace stepsim::python
