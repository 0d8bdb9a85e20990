// The graph builder (sim/frontend/builder.h) for Python: a Graph holds one GraphBuilder, and each
// Stream keeps its Graph alive. Adding a node types it at once, so a shape mismatch raises
// ShapeError at the call that made it, naming both ends and both shapes.
#include <pybind11/stl.h>

#include "graphs/layers/layer.h"
#include "hw/presets/hardware.h"
#include "scripts/python/bindings.h"
#include "sim/frontend/builder.h"
#include "sim/graph/graph_writer.h"
#include "sim/graph/host_limits.h"
#include "sim/graph/loader.h"
#include "sim/graph/validate.h"

namespace py = pybind11;

namespace stepsim::python {

using frontend::GraphBuilder;
using frontend::Stream;

namespace {

const char* dim_kind(shape::DimKind k) {
  switch (k) {
    case shape::DimKind::Static: return "static";
    case shape::DimKind::Dynamic: return "dynamic";
    case shape::DimKind::Ragged: return "ragged";
  }
  return "";
}

const char* elem_kind(shape::ElemType::Kind k) {
  switch (k) {
    case shape::ElemType::Tile: return "tile";
    case shape::ElemType::Scalar: return "scalar";
    case shape::ElemType::Selector: return "selector";
    case shape::ElemType::Buffer: return "buffer";
    case shape::ElemType::Tuple: return "tuple";
  }
  return "";
}

// The stream's dims (outermost first) as (size expression, kind) and its element.
py::dict type_dict(const shape::StreamType& t) {
  py::list dims;
  for (const shape::Dim& d : t.dims) dims.append(py::make_tuple(shape::to_string(d.size), dim_kind(d.kind)));
  py::dict elem;
  elem["kind"] = elem_kind(t.elem.kind);
  elem["text"] = t.elem.str();
  if (t.elem.kind == shape::ElemType::Tile) {
    elem["rows"] = shape::to_string(t.elem.rows);
    elem["cols"] = shape::to_string(t.elem.cols);
    elem["dtype"] = dtype_name(t.elem.dtype);
  }
  py::dict d;
  d["dims"] = dims;
  d["elem"] = elem;
  d["text"] = t.str();
  d["card"] = shape::to_string(t.card());
  return d;
}

std::unique_ptr<GraphBuilder> from_yaml(const std::string& text, const std::string& source,
                                        const std::string& base_dir, const std::map<std::string, std::string>& params) {
  std::vector<std::pair<std::string, std::string>> sets(params.begin(), params.end());
  return std::make_unique<GraphBuilder>(GraphBuilder::from_graph(parse_graph(text, source, base_dir, sets)));
}

std::unique_ptr<GraphBuilder> from_layer(const std::string& name, const std::map<std::string, std::string>& params) {
  return std::make_unique<GraphBuilder>(GraphBuilder::from_graph(layers::build_layer(name, params)));
}

void declare_tensor(GraphBuilder& b, const std::string& name, uint64_t rows, uint64_t cols, const std::string& dtype,
                    const std::string& init, uint64_t seed, const std::string& file, uint64_t block_rows,
                    uint64_t block_cols) {
  TensorSpec t;
  t.name = name;
  t.rows = rows;
  t.cols = cols;
  t.dtype = parse_dtype(dtype);
  if (init != "zeros" && init != "random" && init != "file" && init != "output")
    throw std::invalid_argument("tensor '" + name + "': init must be zeros, random, file or output, got '" + init + "'");
  t.init = init;
  t.seed = seed;
  t.file = file;
  t.block_rows = block_rows;
  t.block_cols = block_cols;
  b.declare_tensor(t);
}

py::dict add_node(GraphBuilder& b, const std::string& name, const std::string& op,
                  const std::map<std::string, std::string>& params,
                  const std::vector<std::pair<std::string, Stream>>& inputs, std::optional<uint64_t> compute_bw,
                  std::optional<uint32_t> depth, std::optional<size_t> num_outputs, const std::string& impl) {
  frontend::NodeOptions opt;
  opt.compute_bw = compute_bw;
  opt.depth = depth;
  opt.num_outputs = num_outputs;
  opt.impl = impl;
  py::dict out;
  for (const auto& [port, s] : b.add(name, op, params, inputs, opt)) out[py::str(port)] = s;
  return out;
}

py::list nodes_of(const GraphBuilder& b) {
  py::list out;
  for (const NodeSpec& n : b.graph().nodes) {
    py::dict d;
    d["name"] = n.name;
    d["op"] = n.op;
    d["params"] = n.params;
    d["inputs"] = n.inputs;
    d["impl"] = n.impl;
    out.append(d);
  }
  return out;
}

py::list tensors_of(const GraphBuilder& b) {
  py::list out;
  for (const TensorSpec& t : b.graph().tensors) {
    py::dict d;
    d["name"] = t.name;
    d["shape"] = py::make_tuple(t.rows, t.cols);
    d["dtype"] = dtype_name(t.dtype);
    d["init"] = t.init;
    out.append(d);
  }
  return out;
}

void bind_stream(py::module_& m) {
  py::class_<Stream>(m, "Stream", "one output port of a node, with its symbolic type")
      .def_property_readonly("node", &Stream::node)
      .def_property_readonly("port", &Stream::port)
      .def_property_readonly("ref", &Stream::ref, "node.port, as a graph file names it")
      .def("type", [](const Stream& s) { return type_dict(s.type()); })
      .def("set_dim", py::overload_cast<size_t, const std::string&>(&Stream::set_dim), py::arg("dim"),
           py::arg("expr"), "give dimension `dim` (outermost first) the known size `expr`")
      .def("__str__", &Stream::shape);
}

// The bounds the C++ side checks, so that the package checks a value before it reaches a binding
// (whose own type check would print pybind11's signature instead of the allowed range).
py::dict limits() {
  py::dict d;
  d["max_name_length"] = kMaxNameLength;
  d["max_side"] = kPositiveRange.max;  // tensor rows, cols, blocks
  d["max_tensor_elements"] = kMaxTensorElements;
  d["max_fifo_depth"] = kMaxFifoDepth;
  d["max_bandwidth"] = kMaxBandwidth;
  d["max_numbered_ports"] = kMaxNumberedPorts;
  d["max_seed"] = INT64_MAX;
  return d;
}

}  // namespace

void bind_graph(py::module_& m) {
  m.def("limits", &limits, "the bounds of names, tensor shapes, depths, bandwidths and numbered outputs");
  m.def("check_name", &check_name, py::arg("kind"), py::arg("name"), py::arg("where"),
        "raises Error unless `name` is an identifier (as every graph name must be)");
  bind_stream(m);
  py::class_<GraphBuilder>(m, "GraphBuilder")
      .def(py::init<std::string, std::string>(), py::arg("name"), py::arg("description") = "")
      .def_static("from_yaml", &from_yaml, py::arg("text"), py::arg("source"), py::arg("base_dir"),
                  py::arg("params"))
      .def_static("from_layer", &from_layer, py::arg("name"), py::arg("params"))
      .def("tensor", &declare_tensor, py::arg("name"), py::arg("rows"), py::arg("cols"), py::arg("dtype"),
           py::arg("init"), py::arg("seed"), py::arg("file"), py::arg("block_rows"), py::arg("block_cols"))
      .def("literal_stream", &GraphBuilder::literal_stream, py::arg("name"), py::arg("tokens"))
      .def("trace_stream", &GraphBuilder::trace_stream, py::arg("name"), py::arg("spec"), py::arg("base_dir"))
      .def("symbol", &GraphBuilder::symbol, py::arg("name"), py::arg("value"))
      .def("add", &add_node, py::arg("name"), py::arg("op"), py::arg("params"), py::arg("inputs"),
           py::arg("compute_bw"), py::arg("depth"), py::arg("num_outputs"), py::arg("impl"))
      .def("stream", &GraphBuilder::stream, py::arg("node"), py::arg("port"))
      .def(
          "forward",
          [](GraphBuilder& b, const std::string& node, const std::string& port, const std::string& type) {
            shape::StreamType t;
            try {
              t = shape::parse_stream_type(type, b.symbols());
            } catch (const std::invalid_argument& e) {  // the type's error, naming what it declares
              throw std::invalid_argument("forward '" + node + "." + port + "': " + e.what());
            }
            return b.forward(node, port, t);
          },
          py::arg("node"), py::arg("port"), py::arg("type"))
      .def("set_depth", &GraphBuilder::set_depth)
      .def("set_compute_bw", &GraphBuilder::set_compute_bw)
      .def("set_impl", &GraphBuilder::set_impl)
      .def("set_tokens", &GraphBuilder::set_tokens, py::arg("tokens"))
      .def("tokens", [](const GraphBuilder& b) { return b.graph().tokens; })
      .def_property_readonly("name", [](const GraphBuilder& b) { return b.graph().name; })
      .def("nodes", &nodes_of)
      .def("has_node", &GraphBuilder::has_node, py::arg("name"))
      .def("tensors", &tensors_of)
      .def("to_yaml", [](const GraphBuilder& b) { return graph_to_yaml(b.graph()); })
      .def("to_yaml_with_files", [](const GraphBuilder& b, const std::map<std::string, std::string>& files) {
        Graph g = b.graph();  // the tensors given as arrays, as init: file (Graph.save)
        for (TensorSpec& t : g.tensors)
          if (files.count(t.name)) {
            t.init = "file";
            t.file = files.at(t.name);
          }
        return graph_to_yaml(g);
      });
}

}  // namespace stepsim::python
