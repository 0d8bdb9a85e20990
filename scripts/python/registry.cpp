// The registries as Python data: every operator's descriptor (ports, typed parameters, category,
// timing rule, units), the tile functions, the presets and the layers. The package builds the
// Graph's operator methods and their docstrings from `ops()`.
#include <pybind11/stl.h>

#include "graphs/layers/layer.h"
#include "hw/bridge/unit_bridge.h"
#include "hw/bridge/unit_ops.h"
#include "hw/functions/functions.h"
#include "hw/ops/op.h"
#include "hw/presets/hardware.h"
#include "hw/presets/tech.h"
#include "sim/graph/loader.h"
#include "scripts/python/bindings.h"

namespace py = pybind11;

namespace stepsim::python {

namespace {

py::dict port_dict(const PortSpec& p) {
  py::dict d;
  const bool numbered = !p.name.empty() && p.name.back() == '*';
  d["name"] = numbered ? p.name.substr(0, p.name.size() - 1) : p.name;
  d["numbered"] = numbered;  // in0, in1, ... / out0, out1, ...
  d["optional"] = p.optional;
  d["doc"] = p.doc;
  return d;
}

py::dict param_dict(const ParamSpec& p) {
  py::dict d;
  d["name"] = p.name;
  d["type"] = param_type_name(p.type);
  d["default"] = p.default_value;
  d["required"] = p.required;
  d["doc"] = p.doc;
  return d;
}

const char* family_name(FunctionFamily f) {
  switch (f) {
    case FunctionFamily::kMap: return "map";
    case FunctionFamily::kAccum: return "accum";
    case FunctionFamily::kFlatMap: return "flatmap";
    case FunctionFamily::kNone: break;
  }
  return "";
}

py::dict op_dict(const OpInfo& op) {
  py::dict d;
  d["name"] = op.name;
  d["category"] = category_name(op.category);
  d["description"] = op.description;
  d["timing"] = op.timing;
  py::list inputs, outputs, params, units;
  for (const PortSpec& p : op.inputs) inputs.append(port_dict(p));
  for (const PortSpec& p : op.outputs) outputs.append(port_dict(p));
  for (const ParamSpec& p : op.params) params.append(param_dict(p));
  for (const UnitRunner& u : op.units) units.append(u.impl + ":" + u.kind + (u.fn.empty() ? "" : "/" + u.fn));
  d["inputs"] = inputs;
  d["outputs"] = outputs;
  d["params"] = params;
  d["functions"] = family_name(op.functions);
  d["uses_compute"] = op.uses_compute;
  d["units"] = units;
  return d;
}

py::list ops() {
  bridge::find_unit_impl("hls");  // the built-in units register their runners on first use
  py::list out;
  for (const OpInfo* op : OpRegistry::instance().all()) out.append(op_dict(*op));
  return out;
}

template <class F>
py::dict function_dict(const F& f, FunctionFamily family) {
  py::dict d;
  d["name"] = f.name;
  d["arity"] = f.arity;
  d["description"] = f.description;
  d["units"] = f.lanes.any() ? bridge::lane_units(f.lanes, family) : std::string();
  return d;
}

py::list functions(const std::string& family) {
  py::list out;
  if (family == "map") {
    for (const std::string& n : map_function_names()) out.append(function_dict(map_function(n), FunctionFamily::kMap));
  } else if (family == "accum") {
    for (const std::string& n : accum_function_names())
      out.append(function_dict(accum_function(n), FunctionFamily::kAccum));
  } else if (family == "flatmap") {
    for (const std::string& n : flatmap_function_names())
      out.append(function_dict(flatmap_function(n), FunctionFamily::kFlatMap));
  } else {
    throw std::invalid_argument("unknown function family '" + family + "'; known: map, accum, flatmap");
  }
  return out;
}

py::list layers() {
  py::list out;
  for (const layers::LayerInfo* l : layers::LayerRegistry::instance().all()) {
    py::dict d;
    d["name"] = l->name;
    d["description"] = l->description;
    py::list params;
    for (const ParamSpec& p : l->params) params.append(param_dict(p));
    d["params"] = params;
    out.append(d);
  }
  return out;
}

py::dict moe_families() {
  py::dict d;
  for (const auto& [name, f] : layers::moe_families()) d[py::str(name)] = py::make_tuple(f.experts, f.topk);
  return d;
}

py::dict preset(const std::string& name_or_path) {
  py::dict d;
  for (const auto& [k, v] : load_preset(name_or_path).to_map()) d[py::str(k)] = v;
  return d;
}

// The dotted names of a technology table's entries (tech_entries.def), with their units.
py::dict tech_entries() {
  py::dict d;
  for (const Technology::EntryDoc& e : Technology::entries()) d[py::str(e.dotted())] = e.unit;
  return d;
}

}  // namespace

void bind_registry(py::module_& m) {
  m.def("ops", &ops, "every operator's descriptor, as dicts");
  m.def("functions", &functions, py::arg("family"), "the tile functions of a family (map, accum, flatmap)");
  m.def("layers", &layers, "the layers of the library with their parameters");
  m.def("moe_families", &moe_families, "{family: (experts, topk)} of the MoE layers' model families");
  m.def("preset_names", &preset_names, "the built-in hardware presets");
  m.def("preset", &preset, py::arg("name"), "a preset's hardware parameters, as text in their units");
  m.def("technology_names", &technology_names, "the built-in technology tables (docs/energy.md)");
  m.def("tech_entries", &tech_entries, "{SECTION.KEY: unit} of a technology table's entries (--set tech.SECTION.KEY)");
  m.def("default_technology", [] { return std::string(kDefaultTechnology); }, "the table a run uses when none is named");
  m.def(
      "technology",
      [](const std::string& name_or_path) {
        const Technology t = load_technology(name_or_path);
        py::dict d;
        for (const Technology::EntryDoc& e : Technology::entries()) d[py::str(e.dotted())] = t.entry(e.dotted()).value;
        return d;
      },
      py::arg("name_or_path"), "a technology table's entries {SECTION.KEY: value} (strict: errors name the file and key)");
  m.def("resolve_path", &resolve_path, py::arg("path"), py::arg("base_dir") = ".",
        "a file path as graph files give it: shared:REL is in the shared data folder (STEPSIM_SHARED)");
  m.attr("source_dir") = STEPSIM_SOURCE_DIR;  // where graphs/models and the other data files are
}

}  // namespace stepsim::python
