#include "sim/cosim/cosim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "hw/stream/bf16.h"
#include "sim/engine/collect.h"
#include "sim/engine/impl_policy.h"
#include "sim/graph/output_file.h"
#include "sim/transform/downtile.h"

namespace stepsim {

namespace {

bool same_element(const Element& a, const Element& b) {
  if (a.v.index() != b.v.index()) return false;
  if (a.is_scalar()) return a.scalar() == b.scalar();
  if (a.is_selector()) return a.selector() == b.selector();
  if (a.is_tile()) {
    const Tile &x = a.tile(), &y = b.tile();
    if (x.rows != y.rows || x.cols != y.cols || x.dtype != y.dtype || x.has_data() != y.has_data()) return false;
    if (!x.has_data()) return true;
    if (x.data == y.data) return true;
    if (x.dtype == DType::INT32) return x.data->i == y.data->i;
    if (x.data->f.size() != y.data->f.size()) return false;
    for (size_t k = 0; k < x.data->f.size(); ++k)
      if (f32_bits(x.data->f[k]) != f32_bits(y.data->f[k])) return false;
    return true;
  }
  if (a.is_tuple()) {
    const auto &x = *a.tuple(), &y = *b.tuple();
    if (x.size() != y.size()) return false;
    for (size_t k = 0; k < x.size(); ++k)
      if (!same_element(x[k], y[k])) return false;
    return true;
  }
  // Buffer references: compare what they hold.
  const Buffer &x = *a.buffer(), &y = *b.buffer();
  if (x.shape != y.shape || x.beats.size() != y.beats.size()) return false;
  for (size_t k = 0; k < x.beats.size(); ++k)
    if (!same_beat(x.beats[k], y.beats[k])) return false;
  return true;
}

std::string element_text(const Element& e) {
  if (e.is_tile()) {
    const Tile& t = e.tile();
    std::ostringstream s;
    s << dtype_name(t.dtype) << "[" << t.rows << "x" << t.cols << "]";
    if (t.has_data()) {
      s << "{";
      const size_t n = t.elems(), shown = std::min<size_t>(n, 16);
      char buf[16];
      for (size_t k = 0; k < shown; ++k) {
        if (t.dtype == DType::INT32) {
          s << (k ? "," : "") << t.data->i[k];
          continue;
        }
        const uint32_t bits = f32_bits(t.data->f[k]);
        if (t.dtype == DType::BF16)
          std::snprintf(buf, sizeof buf, "%04x", unsigned(bits >> 16));
        else
          std::snprintf(buf, sizeof buf, "%08x", unsigned(bits));
        s << (k ? "," : "") << buf;
      }
      if (shown < n) s << ",...(" << n << ")";
      s << "}";
    }
    return s.str();
  }
  if (e.is_tuple()) {
    std::string s = "(";
    for (size_t k = 0; k < e.tuple()->size(); ++k) s += (k ? ", " : "") + element_text((*e.tuple())[k]);
    return s + ")";
  }
  return e.to_string();
}

// The exact content of an element as a key (element_text shortens tiles).
std::string element_key(const Element& e) {
  if (e.is_tile()) {
    const Tile& t = e.tile();
    std::string k =
        std::string(dtype_name(t.dtype)) + "[" + std::to_string(t.rows) + "x" + std::to_string(t.cols) + "]";
    if (t.has_data()) {
      if (t.dtype == DType::INT32)
        k.append(reinterpret_cast<const char*>(t.data->i.data()), t.data->i.size() * sizeof(int32_t));
      else
        k.append(reinterpret_cast<const char*>(t.data->f.data()), t.data->f.size() * sizeof(float));
    }
    return k;
  }
  if (e.is_tuple()) {
    std::string k = "(";
    for (const Element& x : *e.tuple()) k += element_key(x) + ",";
    return k + ")";
  }
  if (e.is_buffer()) {
    std::string k = "buf{";
    for (const Beat& b : e.buffer()->beats)
      k += (b.has_elem ? element_key(b.elem) : "") + "/" + std::to_string(b.stop) + ";";
    return k + "}";
  }
  return e.to_string();
}

// The same beats in another order: the same multiset of elements and of stop/done tokens.
bool same_beats_reordered(const std::vector<LoggedBeat>& a, const std::vector<LoggedBeat>& b) {
  if (a.size() != b.size()) return false;
  auto keys = [](const std::vector<LoggedBeat>& log) {
    std::vector<std::string> elems;
    std::vector<int> tokens;
    for (const LoggedBeat& l : log) {
      if (l.beat.has_elem) elems.push_back(element_key(l.beat.elem));
      tokens.push_back(l.beat.stop * 2 + (l.beat.done ? 1 : 0));
    }
    std::sort(elems.begin(), elems.end());
    std::sort(tokens.begin(), tokens.end());
    return std::make_pair(elems, tokens);
  };
  return keys(a) == keys(b);
}

std::string safe_file_name(const std::string& s) {
  std::string r;
  for (char c : s) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-') ? c : '_';
  return r;
}

// A unit counts neither firings nor FLOPs nor the bytes it holds on chip or moves through memory
// units (its off-chip requests it does: the memory counts them): a bridged node takes
// them from its approximate twin, which saw the same payloads (the comparison checks that), and
// the run's totals are summed again. Its cycles, busy cycles and trace are the unit's own.
void take_counts_from_twin(SimResult& cosim, const SimResult& approx) {
  std::map<std::string, const NodeResult*> twin;
  for (const NodeResult& n : approx.nodes) twin[n.name] = &n;
  for (NodeResult& n : cosim.nodes) {
    auto it = twin.find(n.name);
    if (n.impl != "approx" && it != twin.end()) {
      const NodeResult& t = *it->second;
      n.firings = t.firings;
      n.flops = t.flops;
      n.arithmetic = t.arithmetic;
      n.sram_read_bytes = t.sram_read_bytes;
      n.sram_write_bytes = t.sram_write_bytes;
      n.onchip_requirement_bytes = t.onchip_requirement_bytes;
      n.onchip_peak_bytes = t.onchip_peak_bytes;
      n.memory_units = t.memory_units;
      n.counts_from_twin = true;
    }
  }
  sum_node_totals(cosim);
}

// The options of one of the two runs: every channel logged, the stored tensors kept.
SimOptions run_options(const SimOptions& options, const std::string& default_impl) {
  SimOptions o = options;
  o.default_impl = default_impl;
  o.log_nodes = {"*"};
  o.keep_stored = true;
  return o;
}

// Channel names are "prod.port->cons.port" (node names may hold dots, port names do not).
std::pair<std::string, std::string> ends_of(const std::string& ch) {
  const size_t arrow = ch.find("->");
  if (arrow == std::string::npos) return std::make_pair(std::string(), std::string());
  auto node_of = [](const std::string& s) { return s.substr(0, s.rfind('.')); };
  return std::make_pair(node_of(ch.substr(0, arrow)), node_of(ch.substr(arrow + 2)));
}

// One row per node, with both runs' cycles; the bridged nodes and their unit clocks counted.
void compare_nodes(CosimReport& r) {
  std::map<std::string, const NodeResult*> approx_nodes;
  for (const NodeResult& n : r.approx.nodes) approx_nodes[n.name] = &n;
  for (const NodeResult& n : r.cosim.nodes) {
    CosimNodeRow row;
    row.name = n.name;
    row.op = n.op;
    row.impl = n.impl;
    row.note = n.impl_note;
    row.cosim_cycles = n.finish_cycle;
    row.unit_clocks = n.unit_clocks;
    if (auto it = approx_nodes.find(n.name); it != approx_nodes.end()) row.approx_cycles = it->second->finish_cycle;
    if (n.impl != "approx") ++r.bridged_nodes;
    r.unit_clocks += n.unit_clocks;
    r.nodes.push_back(row);
  }
}

// Reassemble and EagerMerge take chunks in arrival order; on the pins "first" is decided at
// clock edges, in the approximate operator in model time (units.md, "Known differences"), so
// where the two runs time their inputs differently, their outputs and everything downstream
// may carry the same beats in another order. Those nodes (into r.order_nodes) and downstream.
std::set<std::string> order_dependent_nodes(CosimReport& r) {
  std::multimap<std::string, std::string> consumers;
  for (const auto& [name, log] : r.cosim.channel_logs) {
    const auto [p, q] = ends_of(name);
    if (!p.empty()) consumers.emplace(p, q);
  }
  std::vector<std::string> todo;
  for (const NodeResult& n : r.cosim.nodes)
    if (n.op == op_name(OpKind::kReassemble) || n.op == op_name(OpKind::kEagerMerge)) {
      r.order_nodes.push_back(n.name);
      todo.push_back(n.name);
    }
  std::set<std::string> order_dependent;
  while (!todo.empty()) {
    const std::string n = todo.back();
    todo.pop_back();
    if (!order_dependent.insert(n).second) continue;
    auto [lo, hi] = consumers.equal_range(n);
    for (auto it = lo; it != hi; ++it) todo.push_back(it->second);
  }
  return order_dependent;
}

// The two runs' logs of one channel, beat by beat.
void compare_logs(CosimChannelRow& row, const std::vector<LoggedBeat>& alog, const std::vector<LoggedBeat>& clog) {
  row.cosim_beats = clog.size();
  row.cosim_last = clog.empty() ? 0 : clog.back().cycle;
  row.approx_beats = alog.size();
  row.approx_last = alog.empty() ? 0 : alog.back().cycle;
  const size_t n = std::min(alog.size(), clog.size());
  for (size_t k = 0; k < n && row.identical; ++k)
    if (!same_beat(alog[k].beat, clog[k].beat)) {
      row.identical = false;
      row.mismatch = "beat " + std::to_string(k) + ": approx " + beat_payload_text(alog[k].beat) + " (cycle " +
                     std::to_string(alog[k].cycle) + "), co-sim " + beat_payload_text(clog[k].beat) + " (cycle " +
                     std::to_string(clog[k].cycle) + ")";
    }
  if (row.identical && alog.size() != clog.size()) {
    row.identical = false;
    row.mismatch = "approx sent " + std::to_string(alog.size()) + " beats, co-sim " + std::to_string(clog.size());
  }
}

void compare_channels(CosimReport& r) {
  std::set<std::string> on_unit;
  for (const NodeResult& n : r.cosim.nodes)
    if (n.impl != "approx") on_unit.insert(n.name);
  const std::set<std::string> order_dependent = order_dependent_nodes(r);
  static const std::vector<LoggedBeat> none;
  for (const auto& [name, clog] : r.cosim.channel_logs) {
    CosimChannelRow row;
    row.name = name;
    const auto [p, q] = ends_of(name);
    row.bridged = !p.empty() && (on_unit.count(p) || on_unit.count(q));
    auto it = r.approx.channel_logs.find(name);
    const std::vector<LoggedBeat>& alog = it == r.approx.channel_logs.end() ? none : it->second;
    compare_logs(row, alog, clog);
    if (!row.identical && order_dependent.count(p)) row.reordered = same_beats_reordered(alog, clog);
    r.identical = r.identical && row.identical;
    r.equivalent = r.equivalent && (row.identical || row.reordered);
    r.channels.push_back(row);
  }
}

// Stored tensors of two runs, bit for bit (functional mode): one row per tensor of `a`.
std::vector<CosimTensorRow> compare_stored(const std::map<std::string, TileData>& a_stored,
                                           const std::map<std::string, TileData>& c_stored) {
  std::vector<CosimTensorRow> rows;
  for (const auto& [name, a] : a_stored) {
    CosimTensorRow row;
    row.name = name;
    auto it = c_stored.find(name);
    const TileData* c = it == c_stored.end() ? nullptr : &it->second;
    const bool ints = !a.i.empty();
    row.elements = ints ? a.i.size() : a.f.size();
    for (uint64_t k = 0; k < row.elements; ++k) {
      const bool same = !c     ? false
                        : ints ? k < c->i.size() && c->i[k] == a.i[k]
                               : k < c->f.size() && f32_bits(c->f[k]) == f32_bits(a.f[k]);
      row.differing += same ? 0 : 1;
    }
    rows.push_back(row);
  }
  return rows;
}

void compare_tensors(CosimReport& r) {
  r.tensors = compare_stored(r.approx.stored, r.cosim.stored);
  for (const CosimTensorRow& row : r.tensors) r.equivalent = r.equivalent && row.differing == 0;
}

// "Accum, 2 Bufferize, 2 Streamify": the operators of `ops`, counted, in first-seen order.
std::string op_counts(const std::vector<std::string>& ops) {
  std::vector<std::pair<std::string, int>> counts;
  for (const std::string& op : ops) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == op; });
    if (it == counts.end())
      counts.push_back({op, 1});
    else
      ++it->second;
  }
  std::string s;
  for (const auto& [op, n] : counts) s += (s.empty() ? "" : ", ") + (n > 1 ? std::to_string(n) + " " : "") + op;
  return s;
}

// The account of a down-tiled graph: each node of the graph before down-tiling with the nodes it
// became, where they ran, and why those that stayed approximate did.
void account_downtile(CosimReport& r, const DowntileResult& d) {
  std::map<std::string, const NodeResult*> ran;
  for (const NodeResult& n : r.cosim.nodes) ran[n.name] = &n;
  auto row_of = [&](CosimDowntileRow row, const std::vector<std::string>& nodes, const std::string& own_reason) {
    std::vector<std::string> on, notes;
    for (const std::string& name : nodes) {
      auto it = ran.find(name);
      if (it == ran.end()) continue;
      ++row.nodes;
      const NodeResult& n = *it->second;
      if (n.impl != "approx") {
        ++row.on_units;
        on.push_back(n.op);
      } else if (!n.impl_note.empty()) {
        std::string text = n.impl_note;  // its kind goes in front of the row's reason once
        for (const char* p : {"tile shape: ", "capacity: "})
          if (text.rfind(p, 0) == 0) text = text.substr(std::string(p).size());
        const std::string note = n.op + " " + n.name + ": " + text;
        if (notes.empty()) row.kind = impl_note_kind(n.impl_note);
        if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
      }
    }
    row.units = op_counts(on);
    if (!own_reason.empty()) {
      row.kind = "not down-tiled";
      row.reason = own_reason;
    } else {
      for (const std::string& n : notes) row.reason += (row.reason.empty() ? "" : "; ") + n;
    }
    if (row.on_units < row.nodes && row.reason.empty()) row.kind = "approximate";
    return row;
  };
  r.downtile_tile = d.tile;
  for (const DowntileNode& n : d.nodes) {
    CosimDowntileRow row;
    row.node = n.name;
    row.op = n.op;
    row.fn = n.fn;
    row.blocked = n.blocked;
    r.downtile.push_back(row_of(row, n.nodes, n.blocked ? "" : n.reason));
  }
  for (const DowntileConversion& c : d.conversions) {
    CosimDowntileRow row;
    row.node = c.stream + (c.to_blocks ? " -> blocks" : " -> logical") + " (for " + c.consumer + ")";
    row.op = "retiling";
    row.conversion = true;
    r.downtile.push_back(row_of(row, c.nodes, ""));
  }
}

// Transaction logs of the channels at bridged nodes, both runs (cycle, channel, payload); the
// report; and the list of the files, with the units' waveforms.
void write_cosim_files(CosimReport& r, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create the co-simulation folder '" + dir + "': " + ec.message());
  for (const CosimChannelRow& row : r.channels) {
    if (!row.bridged) continue;
    for (int which = 0; which < 2; ++which) {
      const auto& logs = which ? r.cosim.channel_logs : r.approx.channel_logs;
      auto it = logs.find(row.name);
      if (it == logs.end()) continue;
      const std::string path = (fs::path(dir) / (safe_file_name(row.name) +
                                                 (which ? std::string(".cosim") : std::string(".approx")) + ".log"))
                                   .string();
      OutputFile f(path, "transaction log");
      f.stream() << "# cycle\tchannel\tpayload\n";
      for (const LoggedBeat& b : it->second)
        f.stream() << b.cycle << "\t" << row.name << "\t" << beat_payload_text(b.beat) << "\n";
      f.commit();
      r.files.push_back(path);
    }
  }
  const std::string path = (fs::path(dir) / "report.md").string();
  OutputFile f(path, "co-simulation report");
  print_cosim_report(r, f.stream());
  f.commit();
  r.files.push_back(path);
  for (const std::string& v : r.cosim.vcd_files) r.files.push_back(v);
}

}  // namespace

bool same_beat(const Beat& a, const Beat& b) {
  if (a.has_elem != b.has_elem || a.stop != b.stop || a.done != b.done) return false;
  return !a.has_elem || same_element(a.elem, b.elem);
}

std::string beat_payload_text(const Beat& b) {
  std::string s;
  if (b.has_elem) s = element_text(b.elem);
  if (b.stop) s += (s.empty() ? "" : " ") + std::string("S") + std::to_string(b.stop);
  if (b.done) s += (s.empty() ? "" : " ") + std::string("D");
  return s;
}

CosimReport cosimulate(const Graph& graph, const SimOptions& options, const CosimOptions& cosim) {
  CosimReport r;
  // The approximate run ignores every `impl:` of the graph.
  r.approx = simulate(all_approximate(graph), run_options(options, "approx"));
  SimOptions c = run_options(options, cosim.impl);
  if (cosim.vcd && !cosim.dir.empty()) c.vcd_dir = cosim.dir;
  r.cosim = simulate(graph, c);
  if (!r.approx.ok || !r.cosim.ok) {
    r.identical = r.equivalent = false;
    return r;
  }
  take_counts_from_twin(r.cosim, r.approx);
  compare_nodes(r);
  compare_channels(r);
  compare_tensors(r);
  if (cosim.downtile) account_downtile(r, *cosim.downtile);
  if (cosim.logical && options.functional) {
    // The graph as it was before down-tiling, all-approximate: the down-tiled graph computes its
    // stored tensors bit for bit (sim/transform/downtile.h), on the units too.
    SimOptions o = options;
    o.default_impl = "approx";
    o.keep_stored = true;
    o.log_nodes.clear();
    o.output_dir.clear();  // its stored tensors are compared, not written
    o.trace = false;
    o.vcd_dir.clear();
    const SimResult logical = simulate(all_approximate(*cosim.logical), o);
    r.logical_compared = true;
    if (!logical.ok) throw std::runtime_error("the graph before down-tiling failed: " + logical.error);
    r.logical_cycles = logical.cycles;
    r.logical_wall_seconds = logical.wall_seconds;
    r.logical_tensors = compare_stored(logical.stored, r.cosim.stored);
    for (const CosimTensorRow& row : r.logical_tensors) r.logical_identical = r.logical_identical && !row.differing;
  }
  if (!cosim.dir.empty()) write_cosim_files(r, cosim.dir);
  return r;
}

std::string cosim_failure(const CosimOptions& co, const std::string& error) {
  const std::string on = co.impl == "approx" ? "the units their impl: names" : co.impl + " units";
  return "co-simulation (the run with nodes on " + on + "): " + error;
}

void print_downtile_account(const CosimReport& r, std::ostream& out) {
  const std::string T = std::to_string(r.downtile_tile);
  size_t nodes = 0, blocked = 0, whole = 0, derived = 0, on = 0, conv = 0, conv_nodes = 0;
  for (const CosimDowntileRow& row : r.downtile) {
    derived += row.nodes;
    on += row.on_units;
    if (row.conversion) {
      ++conv;
      conv_nodes += row.nodes;
      continue;
    }
    ++nodes;
    blocked += row.blocked ? 1 : 0;
    whole += row.nodes && row.on_units == row.nodes ? 1 : 0;
  }
  std::string impl = "unit";
  for (const CosimNodeRow& n : r.nodes)
    if (n.impl != "approx") impl = n.impl;
  out << "## Down-tiled to [" << T << " x " << T << "] blocks\n\n";
  out << blocked << " of " << nodes << " nodes rewritten onto blocks, " << nodes - blocked
      << " kept at their logical tiles; " << conv << " conversions between the two (" << conv_nodes
      << " retiling nodes). The down-tiled graph: " << derived << " nodes, " << on << " on " << impl << " units; "
      << whole << " of the " << nodes << " nodes entirely on units.\n";
  if (r.logical_compared) {
    out << "Against the graph before down-tiling (all-approximate, " << r.logical_cycles << " cycles):";
    for (const CosimTensorRow& t : r.logical_tensors)
      out << " " << t.name << " "
          << (t.differing
                  ? "DIFFERS (" + std::to_string(t.differing) + " of " + std::to_string(t.elements) + " elements)"
                  : std::string("identical"));
    if (r.logical_tensors.empty()) out << " no stored tensors to compare";
    out << (r.logical_identical && !r.logical_tensors.empty() ? " (bit for bit).\n" : ".\n");
  }
  out << "\n| node | op | down-tiled | on units | units | why not on units |\n|---|---|---|---:|---|---|\n";
  for (const CosimDowntileRow& row : r.downtile) {
    std::string why = row.kind.empty() ? "" : row.kind + ": " + row.reason;
    if (row.kind == "approximate") why = "approximate";
    out << "| " << row.node << " | " << row.op << (row.fn.empty() ? "" : " " + row.fn) << " | "
        << (row.conversion ? "-"
            : row.blocked  ? "yes"
                           : "no")
        << " | " << row.on_units << "/" << row.nodes << " | " << row.units << " | " << why << " |\n";
  }
  out << "\n";
}

void print_cosim_report(const CosimReport& r, std::ostream& out) {
  auto pct = [](uint64_t a, uint64_t c) {
    if (a == 0) return std::string(c == 0 ? "0.00 %" : "n/a");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.2f %%", 100.0 * (double(c) - double(a)) / double(a));
    return std::string(buf);
  };
  std::string impl = "unit";
  for (const CosimNodeRow& n : r.nodes)
    if (n.impl != "approx") impl = n.impl;
  out << "# Co-simulation report\n\n";
  if (!r.approx.ok || !r.cosim.ok) {
    out << "A run failed: " << (r.approx.ok ? "co-simulation: " + r.cosim.error : "approximate: " + r.approx.error)
        << "\n";
    return;
  }
  size_t same = 0, reordered = 0;
  for (const CosimChannelRow& c : r.channels) {
    same += c.identical ? 1 : 0;
    reordered += c.reordered ? 1 : 0;
  }
  if (r.identical) {
    out << "Payload streams: identical on every channel (" << r.channels.size() << " channels).\n";
  } else {
    out << "Payload streams: identical on " << same << " of " << r.channels.size() << " channels";
    if (reordered) {
      out << "; the same beats in another order on " << reordered << " downstream of an arrival-order decision (";
      for (size_t k = 0; k < r.order_nodes.size(); ++k) out << (k ? ", " : "") << r.order_nodes[k];
      out << ")";
    }
    if (same + reordered < r.channels.size()) out << "; DIFFERENT on " << r.channels.size() - same - reordered;
    out << ".\n";
  }
  if (!r.tensors.empty()) {
    out << "Stored tensors:";
    for (const CosimTensorRow& t : r.tensors)
      out << " " << t.name << " "
          << (t.differing
                  ? "DIFFERS (" + std::to_string(t.differing) + " of " + std::to_string(t.elements) + " elements)"
                  : std::string("identical"));
    out << ".\n";
  }
  out << "Verdict: " << (r.equivalent ? "equivalent" : "NOT equivalent")
      << " (every channel identical or reordered, every stored tensor bit for bit).\n";
  out << "Total cycles: approx " << r.approx.cycles << ", co-simulation " << r.cosim.cycles << " ("
      << int64_t(r.cosim.cycles) - int64_t(r.approx.cycles) << ", " << pct(r.approx.cycles, r.cosim.cycles) << ").\n";
  const double w = r.cosim.wall_seconds > 0 ? r.cosim.wall_seconds : 1e-9;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "Nodes on units: %zu; unit clock edges: %llu; co-simulation wall %.3f s (approx %.3f s): "
                "%.0f model cycles/s, %.0f unit clocks/s.\n",
                r.bridged_nodes, (unsigned long long)r.unit_clocks, r.cosim.wall_seconds, r.approx.wall_seconds,
                double(r.cosim.cycles) / w, double(r.unit_clocks) / w);
  out << buf << "\n";
  if (r.downtile_tile) print_downtile_account(r, out);
  out << "| node | op | impl | approx cycles | co-sim cycles | difference | error "
         "|\n|---|---|---|---:|---:|---:|---:|\n";
  for (const CosimNodeRow& n : r.nodes)
    out << "| " << n.name << " | " << n.op << " | " << n.impl << (n.note.empty() ? "" : " (no unit)") << " | "
        << n.approx_cycles << " | " << n.cosim_cycles << " | " << int64_t(n.cosim_cycles) - int64_t(n.approx_cycles)
        << " | " << pct(n.approx_cycles, n.cosim_cycles) << " |\n";
  bool notes = false;
  for (const CosimNodeRow& n : r.nodes)
    if (!n.note.empty()) {
      if (!notes) out << "\nStayed approximate under the " << impl << " default:\n";
      notes = true;
      out << "- " << n.name << ": " << n.note << "\n";
    }
  out << "\n| channel | beats | identical | last beat approx | last beat co-sim |\n|---|---:|---|---:|---:|\n";
  for (const CosimChannelRow& c : r.channels)
    out << "| " << c.name << (c.bridged ? " *" : "") << " | " << c.cosim_beats << " | "
        << (c.identical   ? "yes"
            : c.reordered ? "reordered"
                          : "NO: " + c.mismatch)
        << " | " << c.approx_last << " | " << c.cosim_last << " |\n";
  out << "\n(* = a channel of a node on a unit; its transaction logs are written with --cosim-dir.)\n";
}

}  // namespace stepsim
