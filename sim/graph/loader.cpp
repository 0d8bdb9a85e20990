#include "sim/graph/loader.h"
#include "sim/graph/tensors.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "hw/ops/op.h"
#include "hw/presets/input_file.h"
#include "hw/presets/strict_yaml.h"
#include "hw/stream/number_text.h"
#include "sim/graph/host_limits.h"
#include "sim/graph/validate.h"

namespace stepsim {

namespace fs = std::filesystem;

std::string shared_dir() {
  if (const char* e = std::getenv("STEPSIM_SHARED")) return e;
  return std::string(STEPSIM_SOURCE_DIR) + "/../shared";
}

size_t CsvTable::column(const std::string& name, const std::string& file) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  std::string cols;
  for (const auto& h : header) cols += (cols.empty() ? "" : ", ") + h;
  throw std::invalid_argument(file + ": no column '" + name + "' (columns: " + cols + ")");
}

CsvTable read_csv(const std::string& path) {
  check_input_file(path, "trace file", kMaxTextInputBytes);
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::invalid_argument("cannot open trace file '" + path + "'");
  CsvTable t;
  std::string line;
  size_t lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cells.push_back(c);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    if (t.header.empty()) {
      t.header = cells;
      continue;
    }
    if (cells.size() != t.header.size())
      throw std::invalid_argument(path + ":" + std::to_string(lineno) + ": expected " +
                                  std::to_string(t.header.size()) + " columns, found " + std::to_string(cells.size()));
    t.rows.push_back(std::move(cells));
  }
  if (t.header.empty()) throw std::invalid_argument("trace file '" + path + "' is empty");
  return t;
}

namespace {

// Scalar or flow list as text ("[1, 2]").
std::string node_text(const YAML::Node& n, const std::string& source, const std::string& key) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) {
    std::string s = "[";
    for (size_t i = 0; i < n.size(); ++i) s += (i ? "," : "") + node_text(n[i], source, key);
    return s + "]";
  }
  throw std::invalid_argument(at(source, n) + ": " + key + " must be a value or a list, got " + kind_name(n));
}

int64_t cell_int(const std::string& cell, const std::string& file, size_t row) {
  int64_t v = 0;
  if (!parse_int64(cell, v))
    throw std::invalid_argument(file + ": data row " + std::to_string(row) + ": '" + cell +
                                "' is not an integer (64-bit)");
  return v;
}

// A symbolic expression (a symbol's value, a dims size) held to the bounds of
// check_expression_text, its error naming the file, line and key.
void expression_at(const std::string& text, const YAML::Node& n, const std::string& source, const std::string& key) {
  try {
    check_expression_text(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(at(source, n) + ": " + key + ": " + e.what());
  }
}

// Replaces ${name} with graph parameter values.
std::string substitute(const std::string& text, const std::map<std::string, std::string>& vars,
                       const std::string& source) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t a = text.find("${", i);
    if (a == std::string::npos) {
      out += text.substr(i);
      break;
    }
    size_t b = text.find('}', a);
    if (b == std::string::npos) throw std::invalid_argument(source + ": unterminated ${ in '" + text + "'");
    out += text.substr(i, a - i);
    std::string name = text.substr(a + 2, b - a - 2);
    auto it = vars.find(name);
    if (it == vars.end()) throw std::invalid_argument(source + ": unknown graph parameter ${" + name + "}");
    out += it->second;
    i = b + 1;
  }
  return out;
}

void check_stream_length(size_t beats, const std::string& where) {
  if (beats > kMaxStreamBeats)
    throw std::invalid_argument(where + ": " + std::to_string(beats) + " elements exceed the limit of " +
                                std::to_string(kMaxStreamBeats) + " per stream held in memory");
}

std::vector<Beat> trace_stream(const YAML::Node& spec, const std::string& name, const std::string& base_dir,
                               const std::string& source) {
  const std::string where = source + ": stream '" + name + "'";
  check_map(spec, source, "stream '" + name + "'",
            {"trace", "kind", "rank", "where", "rows", "limit", "columns", "column", "add", "ceil_div"});
  std::string file = resolve_path(scalar(spec["trace"], source, "trace"), base_dir);
  CsvTable t = read_csv(file);
  std::string kind = spec["kind"] ? scalar(spec["kind"], source, "kind") : "scalar";
  const int64_t rank = spec["rank"] ? integer(spec["rank"], source, "rank", {0, 1}) : 0;
  // Row filters.
  std::vector<size_t> filter_cols;
  std::vector<std::string> filter_values;
  if (spec["where"]) {
    check_map(spec["where"], source, "where", {});
    for (auto it = spec["where"].begin(); it != spec["where"].end(); ++it) {
      filter_cols.push_back(t.column(scalar(it->first, source, "where key"), file));
      filter_values.push_back(scalar(it->second, source, "where." + it->first.Scalar()));
    }
  }
  std::vector<size_t> rows;  // data row numbers (0-based) kept
  for (size_t r = 0; r < t.rows.size(); ++r) {
    bool keep = true;
    for (size_t k = 0; k < filter_cols.size(); ++k) keep = keep && t.rows[r][filter_cols[k]] == filter_values[k];
    if (keep) rows.push_back(r);
  }
  if (spec["rows"]) {
    const YAML::Node& rs = spec["rows"];
    if (!rs.IsSequence() || rs.size() != 2)
      throw std::invalid_argument(at(source, rs) + ": rows must be [first, last]");
    const IntRange within{1, int64_t(rows.size())};
    const int64_t first = integer(rs[0], source, "rows[0]", within), last = integer(rs[1], source, "rows[1]", within);
    if (last < first) throw std::invalid_argument(at(source, rs) + ": rows must be [first, last] with first <= last");
    rows = std::vector<size_t>(rows.begin() + (first - 1), rows.begin() + last);
  }
  if (spec["limit"]) {
    const uint64_t n = uint64_t(integer(spec["limit"], source, "limit", kCountRange));
    if (n < rows.size()) rows.resize(n);
  }
  if (rows.empty()) throw std::invalid_argument(where + ": no rows selected from " + file);
  check_stream_length(rows.size(), where);
  std::vector<Token> toks;
  if (kind == "selector") {
    std::string prefix = spec["columns"] ? scalar(spec["columns"], source, "columns") : "expert";
    std::vector<size_t> cols;
    for (size_t i = 0; i < t.header.size(); ++i)
      if (t.header[i].rfind(prefix, 0) == 0) cols.push_back(i);
    if (cols.empty()) throw std::invalid_argument(file + ": no columns starting with '" + prefix + "'");
    for (size_t r : rows) {
      Selector s;
      for (size_t c : cols) {
        const int64_t e = cell_int(t.rows[r][c], file, r + 1);
        if (e < 0 || e >= Selector::kMaxBits)
          throw std::invalid_argument(file + ": data row " + std::to_string(r + 1) + ": expert id " +
                                      std::to_string(e) + " outside 0.." + std::to_string(Selector::kMaxBits - 1));
        s.set(int(e));
      }
      toks.push_back(Token::e(Element(s)));
    }
  } else if (kind == "scalar") {
    if (!spec["column"]) throw std::invalid_argument(where + ": a scalar trace stream needs 'column'");
    size_t c = t.column(scalar(spec["column"], source, "column"), file);
    const IntRange offsets{-kMaxParamValue, kMaxParamValue};
    const int64_t add = spec["add"] ? integer(spec["add"], source, "add", offsets) : 0;
    const int64_t div = spec["ceil_div"] ? integer(spec["ceil_div"], source, "ceil_div", kPositiveRange) : 1;
    for (size_t r : rows) {
      // Trace values are checked against the same bound as parameters: the sum and the rounding
      // below stay inside 64 bits, and a value no trace could hold is named, not wrapped.
      const int64_t raw = cell_int(t.rows[r][c], file, r + 1);
      if (raw < -kMaxParamValue || raw > kMaxParamValue)
        throw std::invalid_argument(file + ": data row " + std::to_string(r + 1) + ": " + t.header[c] + " " +
                                    std::to_string(raw) + " outside the allowed range " +
                                    IntRange{-kMaxParamValue, kMaxParamValue}.text());
      const int64_t v = raw + add;
      const int64_t q = v >= 0 ? (v + div - 1) / div : -((-v) / div);
      toks.push_back(Token::e(Element(Scalar{q})));
    }
  } else {
    throw std::invalid_argument(at(source, spec["kind"]) + ": kind must be selector or scalar, got '" + kind + "'");
  }
  if (rank == 1) toks.push_back(Token::s(1));
  toks.push_back(Token::d());
  return to_beats(toks);
}

std::vector<Beat> repeat_stream(const YAML::Node& spec, const std::string& name, const std::string& source) {
  // {repeat: ELEMENT, count: N, rank: 0|1}: N copies of one element.
  check_map(spec, source, "stream '" + name + "'", {"repeat", "count", "rank"});
  Element e = parse_element(scalar(spec["repeat"], source, "repeat"));
  const int64_t n = spec["count"] ? integer(spec["count"], source, "count", {0, int64_t(kMaxStreamBeats)}) : 1;
  const int64_t rank = spec["rank"] ? integer(spec["rank"], source, "rank", {0, 1}) : 0;
  std::vector<Token> toks(size_t(n), Token::e(e));
  if (rank == 1 && n > 0) toks.push_back(Token::s(1));
  toks.push_back(Token::d());
  return to_beats(toks);
}

TensorSpec tensor_spec(const std::string& name, const YAML::Node& n, const std::string& base_dir,
                       const std::string& source) {
  TensorSpec t;
  t.name = name;
  const std::string key = "tensor '" + name + "'";
  const std::string where = source + ": " + key;
  check_map(n, source, key, {"shape", "dtype", "init", "seed", "file", "block"});
  const YAML::Node& shape = n["shape"];
  if (!shape || !shape.IsSequence() || shape.size() != 2)
    throw std::invalid_argument(where + ": shape must be [rows, cols]");
  t.rows = uint64_t(integer(shape[0], source, key + " rows", kPositiveRange));
  t.cols = uint64_t(integer(shape[1], source, key + " cols", kPositiveRange));
  uint64_t elements = 0;
  if (__builtin_mul_overflow(t.rows, t.cols, &elements) || elements > kMaxTensorElements)
    throw std::invalid_argument(where + ": shape [" + std::to_string(t.rows) + ", " + std::to_string(t.cols) +
                                "] has more elements than the limit of " + std::to_string(kMaxTensorElements));
  if (n["dtype"]) {
    try {
      t.dtype = parse_dtype(scalar(n["dtype"], source, "dtype"));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(at(source, n["dtype"]) + ": " + e.what());
    }
  }
  t.init = n["init"] ? scalar(n["init"], source, "init") : "zeros";
  if (t.init != "zeros" && t.init != "random" && t.init != "file" && t.init != "output")
    throw std::invalid_argument(at(source, n["init"]) + ": init must be zeros, random, file or output, got '" + t.init +
                                "'");
  if (n["seed"]) t.seed = uint64_t(integer(n["seed"], source, "seed", {0, INT64_MAX}));
  if (n["file"]) t.file = resolve_path(scalar(n["file"], source, "file"), base_dir);
  if (n["block"]) {
    const YAML::Node& block = n["block"];
    if (!block.IsSequence() || block.size() != 2)
      throw std::invalid_argument(where + ": block must be [rows, cols] (a blocked layout) or absent (row-major)");
    t.block_rows = uint64_t(integer(block[0], source, key + " block rows", kPositiveRange));
    t.block_cols = uint64_t(integer(block[1], source, key + " block cols", kPositiveRange));
    if (t.rows % t.block_rows || t.cols % t.block_cols)
      throw std::invalid_argument(where + ": block [" + std::to_string(t.block_rows) + ", " +
                                  std::to_string(t.block_cols) + "] must divide the shape [" + std::to_string(t.rows) +
                                  ", " + std::to_string(t.cols) + "]");
  }
  if (t.init == "file" && t.file.empty()) throw std::invalid_argument(where + ": init: file needs 'file:'");
  if (!t.file.empty() && t.init != "file")
    throw std::invalid_argument(where + ": 'file:' is read only with init: file (init is " + t.init + ")");
  return t;  // the rest (the .npy itself) in check_graph
}

// `input_depth: {PORT: N}`: the depth of the channel into each named input, which must be one of
// the node's connected inputs (a depth for a port nothing feeds would silently do nothing).
void read_input_depths(NodeSpec& s, const YAML::Node& depths, const std::string& source, const std::string& key) {
  check_map(depths, source, key + " input_depth", {});
  for (auto it = depths.begin(); it != depths.end(); ++it) {
    const std::string port = scalar(it->first, source, "input_depth port");
    if (!s.inputs.count(port))
      throw std::invalid_argument(at(source, it->first) + ": " + key + " input_depth names '" + port +
                                  "', which is not one of its inputs");
    s.input_depth[port] =
        uint32_t(integer(it->second, source, key + " input_depth." + port, {1, int64_t(kMaxFifoDepth)}));
  }
}

NodeSpec node_spec_from(const YAML::Node& n, const std::string& source) {
  NodeSpec s;
  if (!n.IsMap() || !n["name"] || !n["op"])
    throw std::invalid_argument(at(source, n) + ": every node needs 'name' and 'op'");
  s.name = scalar(n["name"], source, "name");
  check_name("node", s.name, at(source, n["name"]));
  s.op = scalar(n["op"], source, "op");
  const std::string where = source + ": node '" + s.name + "'";
  try {
    OpRegistry::instance().find(s.op);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where + ": " + e.what());  // unknown operator, with the list
  }
  const std::string key = "node '" + s.name + "'";
  check_map(
      n, source, key,
      {"name", "op", "params", "inputs", "compute_bw", "depth", "input_depth", "outputs", "impl", "dims", "types"});
  if (n["params"]) {
    check_map(n["params"], source, key + " params", {});
    for (auto it = n["params"].begin(); it != n["params"].end(); ++it) {
      const std::string p = scalar(it->first, source, "parameter name");
      s.params[p] = node_text(it->second, source, key + " parameter '" + p + "'");
    }
  }
  if (n["inputs"]) {
    check_map(n["inputs"], source, key + " inputs", {});
    for (auto it = n["inputs"].begin(); it != n["inputs"].end(); ++it) {
      const std::string port = scalar(it->first, source, "input port");
      const std::string from = scalar(it->second, source, key + " input '" + port + "'");
      check_port_number(port, where);
      check_port_number(from.substr(from.find('.') == std::string::npos ? from.size() : from.find('.') + 1),
                        where + ": input '" + port + "'");
      s.inputs[port] = from;
    }
  }
  if (n["dims"]) {
    check_map(n["dims"], source, key + " dims", {});
    for (auto it = n["dims"].begin(); it != n["dims"].end(); ++it) {
      const std::string port = scalar(it->first, source, "dims port");
      // A copy: `it->second` is a member of a temporary proxy, gone before a range-for's body runs.
      const YAML::Node sizes = it->second;
      if (!sizes.IsSequence()) throw std::invalid_argument(where + ": dims." + port + " must be a list");
      for (const YAML::Node& d : sizes) {
        s.dims[port].push_back(scalar(d, source, key + " dims." + port));
        if (!s.dims[port].back().empty()) expression_at(s.dims[port].back(), d, source, key + " dims." + port);
      }
    }
  }
  if (n["impl"]) s.impl = scalar(n["impl"], source, "impl");
  if (n["types"]) {
    check_map(n["types"], source, key + " types", {});
    for (auto it = n["types"].begin(); it != n["types"].end(); ++it)
      s.types[scalar(it->first, source, "types port")] = scalar(it->second, source, key + " types");
  }
  if (!s.impl.empty() && s.impl != "approx" && s.impl != "hls" && s.impl != "rtl")
    throw std::invalid_argument(where + ": impl must be approx, hls or rtl, got '" + s.impl + "'");
  if (n["compute_bw"])
    s.compute_bw = uint64_t(integer(n["compute_bw"], source, key + " compute_bw", {1, int64_t(kMaxBandwidth)}));
  if (n["depth"]) s.depth = uint32_t(integer(n["depth"], source, key + " depth", {1, int64_t(kMaxFifoDepth)}));
  if (n["input_depth"]) read_input_depths(s, n["input_depth"], source, key);
  if (n["outputs"])
    s.num_outputs = size_t(integer(n["outputs"], source, key + " outputs", {1, int64_t(kMaxNumberedPorts)}));
  return s;
}

using Sets = std::vector<std::pair<std::string, std::string>>;

// The graph parameters (`params:`) with their defaults as text.
std::map<std::string, std::string> graph_params(const YAML::Node& root, const std::string& source) {
  std::map<std::string, std::string> vars;
  if (!root["params"]) return vars;
  check_map(root["params"], source, "params", {});
  for (auto it = root["params"].begin(); it != root["params"].end(); ++it) {
    const std::string k = scalar(it->first, source, "parameter name");
    vars[k] = node_text(it->second, source, "graph parameter '" + k + "'");
  }
  return vars;
}

// The text with ${...} substituted (line by line, so that positions stay right; not in the
// `params:` section, nor in comments).
std::string substitute_text(const std::string& yaml_text, const std::map<std::string, std::string>& vars,
                            const std::string& source) {
  std::stringstream in(yaml_text), outs;
  std::string line;
  bool in_params = false;
  while (std::getline(in, line)) {
    if (line.rfind("params:", 0) == 0)
      in_params = true;
    else if (!line.empty() && line[0] != ' ' && line[0] != '#')
      in_params = false;
    const size_t first = line.find_first_not_of(" \t");
    const bool comment = first != std::string::npos && line[first] == '#';  // comments are not substituted
    outs << (in_params || comment ? line : substitute(line, vars, source)) << "\n";
  }
  return outs.str();
}

// The name a mapping's key gives (a tensor's, a stream's), checked to be an identifier; an error
// points at the key.
std::string named(const std::string& kind, const YAML::Node& key, const std::string& source) {
  const std::string name = scalar(key, source, kind + " name");
  check_name(kind, name, at(source, key));
  return name;
}

// One stream of `streams:`: token text, a trace file or a repeated element.
void read_stream(Graph& g, const std::string& name, const YAML::Node& spec_node, const std::string& base_dir,
                 const std::string& source) {
  YAML::Emitter spec;
  spec.SetMapFormat(YAML::Flow);
  spec.SetSeqFormat(YAML::Flow);
  spec << spec_node;
  g.stream_specs[name] = spec.c_str();
  try {
    if (spec_node.IsScalar())
      g.streams[name] = to_beats(parse_tokens(spec_node.Scalar()));
    else if (spec_node.IsMap() && spec_node["trace"])
      g.streams[name] = trace_stream(spec_node, name, base_dir, source);
    else if (spec_node.IsMap() && spec_node["repeat"])
      g.streams[name] = repeat_stream(spec_node, name, source);
    else
      throw std::invalid_argument("expected token text, {trace: FILE, ...} or {repeat: ELEMENT, count: N}");
    check_stream_length(g.streams[name].size(), source + ": stream '" + name + "'");
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    // Messages that already name the file keep their own position.
    if (msg.rfind(source, 0) == 0) throw;
    throw std::invalid_argument(at(source, spec_node) + ": stream '" + name + "': " + msg);
  }
}

// Name, description, tokens, impl, symbols, streams and tensors: everything but the nodes.
void read_header(Graph& g, const YAML::Node& root, const std::string& base_dir, const std::string& source) {
  g.name = root["name"] ? scalar(root["name"], source, "name") : identifier_from(fs::path(source).stem().string());
  check_name("graph", g.name, root["name"] ? at(source, root["name"]) : source);
  if (root["description"]) g.description = scalar(root["description"], source, "description");
  if (root["tokens"]) g.tokens = uint64_t(integer(root["tokens"], source, "tokens", kPositiveRange));
  if (root["impl"]) {
    g.impl = scalar(root["impl"], source, "impl");
    if (g.impl != "approx" && g.impl != "hls" && g.impl != "rtl")
      throw std::invalid_argument(at(source, root["impl"]) + ": impl must be approx, hls or rtl, got '" + g.impl + "'");
  }
  if (root["symbols"]) {
    check_map(root["symbols"], source, "symbols", {});
    for (auto it = root["symbols"].begin(); it != root["symbols"].end(); ++it) {
      const std::string k = scalar(it->first, source, "symbol name");
      check_name("symbol", k, at(source, it->first));
      g.symbols[k] = node_text(it->second, source, "symbol '" + k + "'");
      expression_at(g.symbols[k], it->second, source, "symbol '" + k + "'");
    }
  }
  if (root["streams"]) {
    check_map(root["streams"], source, "streams", {});
    for (auto it = root["streams"].begin(); it != root["streams"].end(); ++it)
      read_stream(g, named("stream", it->first, source), it->second, base_dir, source);
  }
  if (root["tensors"]) {
    check_map(root["tensors"], source, "tensors", {});
    for (auto it = root["tensors"].begin(); it != root["tensors"].end(); ++it)
      g.tensors.push_back(tensor_spec(named("tensor", it->first, source), it->second, base_dir, source));
  }
}

void read_nodes(Graph& g, const YAML::Node& root, const std::string& source) {
  if (!root["nodes"] || !root["nodes"].IsSequence()) throw std::invalid_argument(source + ": 'nodes:' must be a list");
  std::map<std::string, YAML::Mark> node_names;
  for (const YAML::Node& n : root["nodes"]) {
    g.nodes.push_back(node_spec_from(n, source));
    const auto [prev, fresh] = node_names.emplace(g.nodes.back().name, n["name"].Mark());
    if (!fresh)
      throw std::invalid_argument(at(source, n["name"]) + ": duplicate node name '" + g.nodes.back().name +
                                  "' (first given at line " + std::to_string(prev->second.line + 1) + ")");
  }
}

// --set node.param=value
void set_node_params(Graph& g, const Sets& node_sets) {
  for (const auto& [k, v] : node_sets) {
    size_t dot = k.find('.');
    NodeSpec* target = nullptr;
    if (dot != std::string::npos)
      for (NodeSpec& s : g.nodes)
        if (s.name == k.substr(0, dot)) target = &s;
    if (!target)
      throw std::invalid_argument("--set " + k + ": not a hardware parameter, a graph parameter or node.param");
    target->params[k.substr(dot + 1)] = v;
  }
}

// Every node's parameters parsed and range-checked now, before anything is built from them.
void check_node_params(const Graph& g, const std::string& source) {
  for (const NodeSpec& s : g.nodes) {
    const OpInfo& info = OpRegistry::instance().find(s.op);
    try {
      Params(s.op, s.name, &info.params, s.params);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(source + ": " + e.what());
    }
  }
}

}  // namespace

Graph parse_graph(const std::string& yaml_text, const std::string& source, const std::string& base_dir,
                  const Sets& sets) {
  YAML::Node root = load_strict(yaml_text, source);
  if (!root.IsMap()) throw std::invalid_argument(source + ": a graph file is a mapping with 'nodes:'");
  check_map(root, source, "the graph",
            {"name", "description", "tokens", "params", "streams", "tensors", "symbols", "nodes", "impl"});
  // Graph parameters and their overrides; the other --set go to the nodes.
  std::map<std::string, std::string> vars = graph_params(root, source);
  Sets node_sets;
  for (const auto& [k, v] : sets) {
    if (vars.count(k))
      vars[k] = v;
    else
      node_sets.push_back({k, v});
  }
  // Re-parse with the substitutions applied to the text.
  if (!vars.empty() || yaml_text.find("${") != std::string::npos)
    root = load_strict(substitute_text(yaml_text, vars, source), source);
  Graph g;
  g.source = source;
  read_header(g, root, base_dir, source);
  read_nodes(g, root, source);
  set_node_params(g, node_sets);
  check_graph(g);  // the rules every graph follows, however built (sim/graph/validate.h)
  return g;
}

void apply_node_sets(Graph& g, const Sets& sets) {
  set_node_params(g, sets);
  check_node_params(g, g.source);
}

std::string resolve_path(const std::string& p, const std::string& base_dir) {
  if (p.rfind("shared:", 0) == 0) return shared_dir() + "/" + p.substr(7);
  if (fs::path(p).is_absolute()) return p;
  return (fs::path(base_dir) / p).string();
}

Graph load_graph(const std::string& path, const std::vector<std::pair<std::string, std::string>>& sets) {
  // Reading and checking a graph takes about kMemoryPerYamlByte bytes of memory per byte of YAML
  // (measured: a 7.0 MB file of 10^5 nodes peaks at 0.70 GB in `analyze`), so a file whose
  // reading alone would pass the host-memory limit is refused before it is parsed.
  constexpr uint64_t kMemoryPerYamlByte = 100;
  const uint64_t limit = host_memory_limit();
  const std::string text =
      read_input_file(path, "graph file", std::min(kMaxTextInputBytes, limit / kMemoryPerYamlByte), /*allow_fifo=*/true,
                      ": reading a graph takes about " + std::to_string(kMemoryPerYamlByte) +
                          " bytes of memory per byte of YAML, and the host-memory limit is " + std::to_string(limit) +
                          " bytes (STEPSIM_HOST_MEMORY_LIMIT)");
  return parse_graph(text, path, fs::path(path).parent_path().string(), sets);
}

}  // namespace stepsim
