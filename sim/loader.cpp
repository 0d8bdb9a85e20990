#include "sim/loader.h"
#include "sim/tensors.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "hw/ops/op.h"

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
      throw std::invalid_argument(path + ":" + std::to_string(lineno) + ": expected " + std::to_string(t.header.size()) +
                                  " columns, found " + std::to_string(cells.size()));
    t.rows.push_back(std::move(cells));
  }
  if (t.header.empty()) throw std::invalid_argument("trace file '" + path + "' is empty");
  return t;
}

namespace {

int64_t to_int(const std::string& s, const std::string& where) {
  try {
    size_t pos = 0;
    int64_t v = std::stoll(s, &pos);
    if (pos != s.size()) throw std::invalid_argument("");
    return v;
  } catch (const std::exception&) {
    throw std::invalid_argument(where + ": '" + s + "' is not an integer");
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

// Scalar or flow list as text ("[1, 2]").
std::string node_text(const YAML::Node& n, const std::string& where) {
  if (n.IsScalar()) return n.as<std::string>();
  if (n.IsSequence()) {
    std::string s = "[";
    for (size_t i = 0; i < n.size(); ++i) s += (i ? "," : "") + node_text(n[i], where);
    return s + "]";
  }
  throw std::invalid_argument(where + ": expected a value or a list");
}

std::vector<Beat> trace_stream(const YAML::Node& spec, const std::string& name, const std::string& base_dir,
                               const std::string& source) {
  const std::string where = source + ": stream '" + name + "'";
  std::string file = resolve_path(spec["trace"].as<std::string>(), base_dir);
  CsvTable t = read_csv(file);
  std::string kind = spec["kind"] ? spec["kind"].as<std::string>() : "scalar";
  int rank = spec["rank"] ? spec["rank"].as<int>() : 0;
  if (rank < 0 || rank > 1) throw std::invalid_argument(where + ": rank must be 0 or 1");
  // Row filters.
  std::vector<const std::vector<std::string>*> rows;
  for (const auto& r : t.rows) {
    bool keep = true;
    if (spec["where"]) {
      for (auto it = spec["where"].begin(); it != spec["where"].end(); ++it)
        keep = keep && r[t.column(it->first.as<std::string>(), file)] == it->second.as<std::string>();
    }
    if (keep) rows.push_back(&r);
  }
  if (spec["rows"]) {
    auto v = spec["rows"].as<std::vector<int64_t>>();
    if (v.size() != 2 || v[0] < 1 || v[1] < v[0] || size_t(v[1]) > rows.size())
      throw std::invalid_argument(where + ": rows must be [first, last] within 1.." + std::to_string(rows.size()));
    rows = std::vector<const std::vector<std::string>*>(rows.begin() + (v[0] - 1), rows.begin() + v[1]);
  }
  if (spec["limit"]) {
    size_t n = spec["limit"].as<size_t>();
    if (n < rows.size()) rows.resize(n);
  }
  std::vector<Token> toks;
  if (kind == "selector") {
    std::string prefix = spec["columns"] ? spec["columns"].as<std::string>() : "expert";
    std::vector<size_t> cols;
    for (size_t i = 0; i < t.header.size(); ++i)
      if (t.header[i].rfind(prefix, 0) == 0) cols.push_back(i);
    if (cols.empty()) throw std::invalid_argument(file + ": no columns starting with '" + prefix + "'");
    for (const auto* r : rows) {
      Selector s;
      for (size_t c : cols) {
        int64_t e = to_int((*r)[c], file);
        if (e < 0 || e >= Selector::kMaxBits) throw std::invalid_argument(file + ": expert id " + std::to_string(e) + " out of range");
        s.set(int(e));
      }
      toks.push_back(Token::e(Element(s)));
    }
  } else if (kind == "scalar") {
    if (!spec["column"]) throw std::invalid_argument(where + ": a scalar trace stream needs 'column'");
    size_t c = t.column(spec["column"].as<std::string>(), file);
    int64_t add = spec["add"] ? spec["add"].as<int64_t>() : 0;
    int64_t div = spec["ceil_div"] ? spec["ceil_div"].as<int64_t>() : 1;
    if (div < 1) throw std::invalid_argument(where + ": ceil_div must be >= 1");
    for (const auto* r : rows) {
      int64_t v = to_int((*r)[c], file) + add;
      toks.push_back(Token::e(Element(Scalar{(v + div - 1) / div})));
    }
  } else {
    throw std::invalid_argument(where + ": kind must be selector or scalar, got '" + kind + "'");
  }
  if (rows.empty()) throw std::invalid_argument(where + ": no rows selected from " + file);
  if (rank == 1) toks.push_back(Token::s(1));
  toks.push_back(Token::d());
  return to_beats(toks);
}

}  // namespace

Graph parse_graph(const std::string& yaml_text, const std::string& source, const std::string& base_dir,
                  const std::vector<std::pair<std::string, std::string>>& sets) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(source + ": " + e.what());
  }
  if (!root.IsMap()) throw std::invalid_argument(source + ": a graph file is a mapping with 'nodes:'");
  static const std::set<std::string> top = {"name", "description", "params", "streams", "tensors", "symbols", "nodes", "impl"};
  for (auto it = root.begin(); it != root.end(); ++it)
    if (!top.count(it->first.as<std::string>()))
      throw std::invalid_argument(source + ": unknown top-level key '" + it->first.as<std::string>() +
                                  "' (expected name, description, params, streams, tensors, symbols, nodes, impl)");
  // Graph parameters and their overrides.
  std::map<std::string, std::string> vars;
  if (root["params"]) {
    for (auto it = root["params"].begin(); it != root["params"].end(); ++it)
      vars[it->first.as<std::string>()] = node_text(it->second, source);
  }
  std::vector<std::pair<std::string, std::string>> node_sets;
  for (const auto& [k, v] : sets) {
    if (vars.count(k))
      vars[k] = v;
    else
      node_sets.push_back({k, v});
  }
  // Re-parse with substitutions applied to the text.
  std::string text = yaml_text;
  if (!vars.empty() || text.find("${") != std::string::npos) {
    std::stringstream in(yaml_text), outs;
    std::string line;
    bool in_params = false;
    while (std::getline(in, line)) {
      if (line.rfind("params:", 0) == 0) in_params = true;
      else if (!line.empty() && line[0] != ' ' && line[0] != '#') in_params = false;
      const size_t first = line.find_first_not_of(" \t");
      const bool comment = first != std::string::npos && line[first] == '#';  // comments are not substituted
      outs << (in_params || comment ? line : substitute(line, vars, source)) << "\n";
    }
    text = outs.str();
    root = YAML::Load(text);
  }

  Graph g;
  g.source = source;
  g.name = root["name"] ? root["name"].as<std::string>() : fs::path(source).stem().string();
  if (root["description"]) g.description = root["description"].as<std::string>();
  if (root["impl"]) g.impl = root["impl"].as<std::string>();
  if (root["symbols"]) {
    if (!root["symbols"].IsMap()) throw std::invalid_argument(source + ": symbols: must map a symbol to its value");
    for (auto it = root["symbols"].begin(); it != root["symbols"].end(); ++it)
      g.symbols[it->first.as<std::string>()] = node_text(it->second, source + ": symbol '" + it->first.as<std::string>() + "'");
  }
  if (root["streams"]) {
    for (auto it = root["streams"].begin(); it != root["streams"].end(); ++it) {
      std::string name = it->first.as<std::string>();
      YAML::Emitter spec;
      spec.SetMapFormat(YAML::Flow);
      spec.SetSeqFormat(YAML::Flow);
      spec << it->second;
      g.stream_specs[name] = spec.c_str();
      try {
        if (it->second.IsScalar())
          g.streams[name] = to_beats(parse_tokens(it->second.as<std::string>()));
        else if (it->second["trace"])
          g.streams[name] = trace_stream(it->second, name, base_dir, source);
        else if (it->second["repeat"]) {
          // {repeat: ELEMENT, count: N, rank: 0|1}: N copies of one element.
          Element e = parse_element(it->second["repeat"].as<std::string>());
          int64_t n = it->second["count"] ? it->second["count"].as<int64_t>() : 1;
          int rank = it->second["rank"] ? it->second["rank"].as<int>() : 0;
          if (n < 0 || rank < 0 || rank > 1) throw std::invalid_argument("count must be >= 0 and rank 0 or 1");
          std::vector<Token> toks(size_t(n), Token::e(e));
          if (rank == 1 && n > 0) toks.push_back(Token::s(1));
          toks.push_back(Token::d());
          g.streams[name] = to_beats(toks);
        }
        else
          throw std::invalid_argument("expected token text, {trace: FILE, ...} or {repeat: ELEMENT, count: N}");
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(source + ": stream '" + name + "': " + e.what());
      }
    }
  }
  if (root["tensors"]) {
    for (auto it = root["tensors"].begin(); it != root["tensors"].end(); ++it) {
      TensorSpec t;
      t.name = it->first.as<std::string>();
      const YAML::Node& n = it->second;
      const std::string where = source + ": tensor '" + t.name + "'";
      if (!n.IsMap()) throw std::invalid_argument(where + ": expected a map with shape, dtype, init, seed, file, block");
      for (auto kv = n.begin(); kv != n.end(); ++kv) {
        static const std::set<std::string> keys = {"shape", "dtype", "init", "seed", "file", "block"};
        const std::string k = kv->first.as<std::string>();
        if (!keys.count(k))
          throw std::invalid_argument(where + ": unknown key '" + k + "' (expected shape, dtype, init, seed, file, block)");
      }
      if (!n["shape"] || !n["shape"].IsSequence() || n["shape"].size() != 2)
        throw std::invalid_argument(where + ": shape must be [rows, cols]");
      auto shape = n["shape"].as<std::vector<int64_t>>();
      if (shape[0] < 1 || shape[1] < 1) throw std::invalid_argument(where + ": dimensions must be >= 1");
      t.rows = uint64_t(shape[0]);
      t.cols = uint64_t(shape[1]);
      if (n["dtype"]) t.dtype = parse_dtype(n["dtype"].as<std::string>());
      t.init = n["init"] ? n["init"].as<std::string>() : "zeros";
      if (t.init != "zeros" && t.init != "random" && t.init != "file" && t.init != "output")
        throw std::invalid_argument(where + ": init must be zeros, random, file or output");
      if (n["seed"]) t.seed = n["seed"].as<uint64_t>();
      if (n["file"]) t.file = resolve_path(n["file"].as<std::string>(), base_dir);
      if (n["block"]) {
        if (!n["block"].IsSequence() || n["block"].size() != 2)
          throw std::invalid_argument(where + ": block must be [rows, cols] (a blocked layout) or absent (row-major)");
        auto block = n["block"].as<std::vector<int64_t>>();
        if (block[0] < 1 || block[1] < 1 || uint64_t(shape[0]) % uint64_t(block[0]) || uint64_t(shape[1]) % uint64_t(block[1]))
          throw std::invalid_argument(where + ": block [" + std::to_string(block[0]) + ", " + std::to_string(block[1]) +
                                      "] must be >= 1 and divide the shape [" + std::to_string(shape[0]) + ", " +
                                      std::to_string(shape[1]) + "]");
        t.block_rows = uint64_t(block[0]);
        t.block_cols = uint64_t(block[1]);
      }
      if (t.init == "file" && t.file.empty()) throw std::invalid_argument(where + ": init: file needs 'file:'");
      if (t.init == "file") check_tensor_file(t, where);
      g.tensors.push_back(std::move(t));
    }
  }
  if (!root["nodes"] || !root["nodes"].IsSequence()) throw std::invalid_argument(source + ": 'nodes:' must be a list");
  static const std::set<std::string> node_keys = {"name", "op", "params", "inputs", "compute_bw", "depth", "outputs", "impl", "dims", "types"};
  for (const YAML::Node& n : root["nodes"]) {
    NodeSpec s;
    if (!n.IsMap() || !n["name"] || !n["op"]) throw std::invalid_argument(source + ": every node needs 'name' and 'op'");
    s.name = n["name"].as<std::string>();
    s.op = n["op"].as<std::string>();
    const std::string where = source + ": node '" + s.name + "'";
    try {
      OpRegistry::instance().find(s.op);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + ": " + e.what());  // unknown operator, with the list
    }
    for (auto it = n.begin(); it != n.end(); ++it)
      if (!node_keys.count(it->first.as<std::string>()))
        throw std::invalid_argument(where + ": unknown key '" + it->first.as<std::string>() + "'");
    if (n["params"])
      for (auto it = n["params"].begin(); it != n["params"].end(); ++it)
        s.params[it->first.as<std::string>()] = node_text(it->second, where);
    if (n["inputs"]) {
      if (!n["inputs"].IsMap()) throw std::invalid_argument(where + ": inputs must map port -> producer.port");
      for (auto it = n["inputs"].begin(); it != n["inputs"].end(); ++it)
        s.inputs[it->first.as<std::string>()] = it->second.as<std::string>();
    }
    if (n["dims"]) {
      if (!n["dims"].IsMap()) throw std::invalid_argument(where + ": dims must map an output port to a list of sizes");
      for (auto it = n["dims"].begin(); it != n["dims"].end(); ++it) {
        if (!it->second.IsSequence()) throw std::invalid_argument(where + ": dims." + it->first.as<std::string>() + " must be a list");
        for (const YAML::Node& d : it->second) s.dims[it->first.as<std::string>()].push_back(d.as<std::string>());
      }
    }
    if (n["impl"]) s.impl = n["impl"].as<std::string>();
    if (n["types"]) {
      if (!n["types"].IsMap()) throw std::invalid_argument(where + ": types must map an output port to a stream type");
      for (auto it = n["types"].begin(); it != n["types"].end(); ++it)
        s.types[it->first.as<std::string>()] = it->second.as<std::string>();
    }
    if (!s.impl.empty() && s.impl != "approx" && s.impl != "hls" && s.impl != "rtl")
      throw std::invalid_argument(source + ": node '" + s.name + "': impl must be approx, hls or rtl, got '" + s.impl + "'");
    try {
      if (n["compute_bw"]) s.compute_bw = n["compute_bw"].as<uint64_t>();
      if (n["depth"]) s.depth = n["depth"].as<uint32_t>();
      if (n["outputs"]) s.num_outputs = n["outputs"].as<size_t>();
    } catch (const YAML::Exception&) {
      throw std::invalid_argument(where + ": compute_bw, depth and outputs must be non-negative integers");
    }
    g.nodes.push_back(std::move(s));
  }
  // --set node.param=value
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
  return g;
}

std::string resolve_path(const std::string& p, const std::string& base_dir) {
  if (p.rfind("shared:", 0) == 0) return shared_dir() + "/" + p.substr(7);
  if (fs::path(p).is_absolute()) return p;
  return (fs::path(base_dir) / p).string();
}

Graph load_graph(const std::string& path, const std::vector<std::pair<std::string, std::string>>& sets) {
  std::ifstream f(path);
  if (!f) throw std::invalid_argument("cannot open graph file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_graph(ss.str(), path, fs::path(path).parent_path().string(), sets);
}

}  // namespace stepsim
