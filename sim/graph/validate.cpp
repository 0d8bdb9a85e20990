#include "sim/graph/validate.h"

#include <cctype>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "hw/presets/hardware.h"
#include "hw/stream/number_text.h"
#include "sim/graph/host_limits.h"
#include "sim/graph/tensors.h"

namespace stepsim {

namespace {

bool ident_start(char c) { return std::isalpha(uint8_t(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(uint8_t(c)) || c == '_'; }

void fail(const std::string& where, const std::string& msg) {
  throw std::invalid_argument(where.empty() ? msg : where + ": " + msg);
}

// An integer setting within its range, or an error naming it, its value and the range.
void check_range(const std::string& where, const std::string& what, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v < lo || v > hi)
    fail(where, what + " " + std::to_string(v) + " outside the allowed range " + std::to_string(lo) + ".." +
                    std::to_string(hi));
}

bool valid_impl(const std::string& impl) { return impl.empty() || impl == "approx" || impl == "hls" || impl == "rtl"; }

}  // namespace

bool is_identifier(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength || !ident_start(name[0])) return false;
  for (char c : name)
    if (!ident_char(c)) return false;
  return true;
}

std::string quoted(const std::string& text) {
  constexpr size_t kShown = 60;
  std::string s = "'";
  for (size_t i = 0; i < text.size() && i < kShown; ++i) {
    const uint8_t c = uint8_t(text[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      s += buf;
    } else {
      s += char(c);
    }
  }
  s += "'";
  if (text.size() > kShown) s += " (" + std::to_string(text.size()) + " characters)";
  return s;
}

void check_name(const std::string& kind, const std::string& name, const std::string& where) {
  if (is_identifier(name)) return;
  fail(where, kind + " name " + quoted(name) +
                  " is not an identifier: names are a letter or '_', then letters, digits or '_', 1 to " +
                  std::to_string(kMaxNameLength) + " characters");
}

std::string identifier_from(const std::string& text) {
  std::string s;
  for (char c : text) s += ident_char(c) ? c : '_';
  if (s.empty() || !ident_start(s[0])) s = "_" + s;
  return s.substr(0, kMaxNameLength);
}

void check_port_number(const std::string& port, const std::string& where) {
  size_t k = port.size();
  while (k > 0 && std::isdigit(uint8_t(port[k - 1]))) --k;
  if (k == port.size()) return;
  int64_t index = 0;
  if (!parse_int64(port.substr(k), index) || uint64_t(index) >= kMaxNumberedPorts)
    fail(where, "port '" + port + "': numbered ports go from 0 to " + std::to_string(kMaxNumberedPorts - 1));
}

void check_tensor(const TensorSpec& t, const std::string& source) {
  check_name("tensor", t.name, source);  // before the name goes into messages
  const std::string where = (source.empty() ? "" : source + ": ") + "tensor '" + t.name + "'";
  const uint64_t max_side = uint64_t(kPositiveRange.max);
  check_range(where, "rows", t.rows, 1, max_side);
  check_range(where, "cols", t.cols, 1, max_side);
  uint64_t elements = 0;
  if (__builtin_mul_overflow(t.rows, t.cols, &elements) || elements > kMaxTensorElements)
    fail(where, "shape [" + std::to_string(t.rows) + ", " + std::to_string(t.cols) +
                    "] has more elements than the limit of " + std::to_string(kMaxTensorElements));
  if (t.init != "zeros" && t.init != "random" && t.init != "file" && t.init != "output")
    fail(where, "init must be zeros, random, file or output, got " + quoted(t.init));
  check_range(where, "seed", t.seed, 0, uint64_t(INT64_MAX));
  if (t.block_rows || t.block_cols) {
    check_range(where, "block rows", t.block_rows, 1, max_side);
    check_range(where, "block cols", t.block_cols, 1, max_side);
    if (t.rows % t.block_rows || t.cols % t.block_cols)
      fail(where, "block [" + std::to_string(t.block_rows) + ", " + std::to_string(t.block_cols) +
                      "] must divide the shape [" + std::to_string(t.rows) + ", " + std::to_string(t.cols) + "]");
  }
  if (t.init == "file" && t.file.empty()) fail(where, "init: file needs 'file:'");
  if (!t.file.empty() && t.init != "file") fail(where, "'file:' is read only with init: file (init is " + t.init + ")");
  if (t.init == "file") check_tensor_file(t, where);
}

void check_node(const NodeSpec& n, const std::string& where) {
  check_name("node", n.name, where);
  const std::string at = (where.empty() ? "" : where + ": ") + "node '" + n.name + "'";
  const OpInfo* info = nullptr;
  try {
    info = &OpRegistry::instance().find(n.op);
  } catch (const std::invalid_argument& e) {
    fail(at, e.what());  // unknown operator, with the list
  }
  if (!valid_impl(n.impl)) fail(at, "impl must be approx, hls or rtl, got " + quoted(n.impl));
  if (n.compute_bw) check_range(at, "compute_bw", *n.compute_bw, 1, kMaxBandwidth);
  if (n.depth) check_range(at, "depth", *n.depth, 1, kMaxFifoDepth);
  if (n.num_outputs) check_range(at, "outputs", *n.num_outputs, 1, kMaxNumberedPorts);
  for (const auto& [port, depth] : n.input_depth) {
    if (!n.inputs.count(port)) fail(at, "input_depth names '" + port + "', which is not one of its inputs");
    check_range(at, "input_depth." + port, depth, 1, kMaxFifoDepth);
  }
  for (const auto& [port, from] : n.inputs) {
    check_port_number(port, at);
    const size_t dot = from.find('.');
    check_port_number(from.substr(dot == std::string::npos ? from.size() : dot + 1), at + ": input '" + port + "'");
  }
  try {
    Params(info->name, n.name, &info->params, n.params);  // unknown parameters and bad values
  } catch (const std::invalid_argument& e) {
    fail(where, e.what());  // the message names the node and the operator
  }
}

void check_stream(const std::string& name, size_t beats, const std::string& where) {
  check_name("stream", name, where);
  if (beats > kMaxStreamBeats)
    fail(where, "stream '" + name + "': " + std::to_string(beats) + " elements exceed the limit of " +
                    std::to_string(kMaxStreamBeats) + " per stream held in memory");
}

void check_graph(const Graph& g) {
  const std::string& src = g.source;
  check_name("graph", g.name, src);
  if (!valid_impl(g.impl)) fail(src, "impl must be approx, hls or rtl, got " + quoted(g.impl));
  for (const auto& [name, value] : g.symbols) check_name("symbol", name, src);
  for (const auto& [name, beats] : g.streams) check_stream(name, beats.size(), src);
  std::set<std::string> seen;
  for (const TensorSpec& t : g.tensors) {
    check_tensor(t, src);
    if (!seen.insert(t.name).second) fail(src, "tensor '" + t.name + "' is declared twice");
  }
  seen.clear();
  for (const NodeSpec& n : g.nodes) {
    check_node(n, src);
    if (!seen.insert(n.name).second) fail(src, "duplicate node name '" + n.name + "'");
  }
}

}  // namespace stepsim
