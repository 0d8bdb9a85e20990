#include "sim/graph/graph_writer.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <stdexcept>

#include "hw/stream/tile.h"
#include "hw/stream/token.h"
#include "sim/graph/output_file.h"

namespace stepsim {

namespace {

// A parameter value as the loader stored it ("7", "silu", "[1,2]"): lists go back as lists.
void emit_value(YAML::Emitter& e, const std::string& text) {
  if (!text.empty() && text.front() == '[')
    e << YAML::Load(text);
  else
    e << text;
}

std::string flow(const std::function<void(YAML::Emitter&)>& body) {
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  body(e);
  return e.c_str();
}

}  // namespace

std::string graph_to_yaml(const Graph& g) {
  std::string y;
  y += "# Written by stepsim (sim/graph/graph_writer.cpp).\n";
  y += "name: " + flow([&](YAML::Emitter& e) { e << g.name; }) + "\n";
  if (!g.description.empty()) y += "description: " + flow([&](YAML::Emitter& e) { e << g.description; }) + "\n";
  if (g.tokens) y += "tokens: " + std::to_string(g.tokens) + "\n";
  if (!g.impl.empty()) y += "impl: " + g.impl + "\n";
  auto section = [&](const char* key) { y += std::string(key) + ":\n"; };
  if (!g.tensors.empty()) {
    section("tensors");
    for (const TensorSpec& t : g.tensors) {
      y += "  " + flow([&](YAML::Emitter& e) { e << t.name; }) + ": " + flow([&](YAML::Emitter& e) {
             e << YAML::BeginMap << YAML::Key << "shape" << YAML::Value << YAML::BeginSeq << t.rows << t.cols
               << YAML::EndSeq;
             e << YAML::Key << "dtype" << YAML::Value << dtype_name(t.dtype);
             e << YAML::Key << "init" << YAML::Value << t.init;
             if (t.init == "random") e << YAML::Key << "seed" << YAML::Value << t.seed;
             if (t.init == "file") e << YAML::Key << "file" << YAML::Value << t.file;
             if (t.block_rows)
               e << YAML::Key << "block" << YAML::Value << YAML::BeginSeq << t.block_rows << t.block_cols
                 << YAML::EndSeq;
             e << YAML::EndMap;
           }) +
           "\n";
    }
  }
  if (!g.streams.empty()) {
    section("streams");
    for (const auto& [name, beats] : g.streams) {
      auto it = g.stream_specs.find(name);
      const std::string spec =
          it != g.stream_specs.end() ? it->second : flow([&](YAML::Emitter& e) { e << format_beats(beats); });
      y += "  " + flow([&](YAML::Emitter& e) { e << name; }) + ": " + spec + "\n";
    }
  }
  if (!g.symbols.empty()) {
    section("symbols");
    for (const auto& [name, value] : g.symbols)
      y +=
          "  " + flow([&](YAML::Emitter& e) { e << name; }) + ": " + flow([&](YAML::Emitter& e) { e << value; }) + "\n";
  }
  section("nodes");
  for (const NodeSpec& n : g.nodes) {
    y += "  - " + flow([&](YAML::Emitter& e) {
           e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << n.name << YAML::Key << "op" << YAML::Value
             << n.op;
           if (!n.params.empty()) {
             e << YAML::Key << "params" << YAML::Value << YAML::BeginMap;
             for (const auto& [k, v] : n.params) {
               e << YAML::Key << k << YAML::Value;
               emit_value(e, v);
             }
             e << YAML::EndMap;
           }
           if (!n.inputs.empty()) {
             e << YAML::Key << "inputs" << YAML::Value << YAML::BeginMap;
             for (const auto& [k, v] : n.inputs) e << YAML::Key << k << YAML::Value << v;
             e << YAML::EndMap;
           }
           if (n.compute_bw) e << YAML::Key << "compute_bw" << YAML::Value << *n.compute_bw;
           if (n.depth) e << YAML::Key << "depth" << YAML::Value << *n.depth;
           if (!n.input_depth.empty()) {
             e << YAML::Key << "input_depth" << YAML::Value << YAML::BeginMap;
             for (const auto& [port, d] : n.input_depth) e << YAML::Key << port << YAML::Value << d;
             e << YAML::EndMap;
           }
           if (n.num_outputs) e << YAML::Key << "outputs" << YAML::Value << *n.num_outputs;
           if (!n.impl.empty()) e << YAML::Key << "impl" << YAML::Value << n.impl;
           if (!n.types.empty()) {
             e << YAML::Key << "types" << YAML::Value << YAML::BeginMap;
             for (const auto& [port, t] : n.types) e << YAML::Key << port << YAML::Value << YAML::DoubleQuoted << t;
             e << YAML::EndMap;
           }
           if (!n.dims.empty()) {
             e << YAML::Key << "dims" << YAML::Value << YAML::BeginMap;
             for (const auto& [port, sizes] : n.dims) {
               e << YAML::Key << port << YAML::Value << YAML::BeginSeq;
               for (const std::string& s : sizes) e << YAML::DoubleQuoted << s;
               e << YAML::EndSeq;
             }
             e << YAML::EndMap;
           }
           e << YAML::EndMap;
         }) +
         "\n";
  }
  return y;
}

void write_graph(const Graph& g, const std::string& path) { write_output_file(path, "graph file", graph_to_yaml(g)); }

}  // namespace stepsim
