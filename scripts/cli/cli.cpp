// The `stepsim` command line: one subcommand per job (run, ops, eval, presets, analyze, layers,
// build, downtile, sweep), its options parsed with Boost.Program_options. Every option error is
// one line that names the subcommand and the option ("run: unknown option '--foo'", "--outputs
// expects an integer in 1..256, got '100000'"); `stepsim SUBCOMMAND --help` lists the options.
#include "scripts/cli/cli.h"

#include <unistd.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "graphs/layers/layer.h"
#include "hw/ops/op.h"
#include "hw/presets/tech.h"
#include "hw/stream/token.h"
#include "scripts/cli/docs.h"
#include "scripts/cli/python_commands.h"
#include "scripts/cli/sweep.h"
#include "sim/cosim/cosim.h"
#include "sim/engine/eval.h"
#include "sim/engine/impl_policy.h"
#include "sim/engine/run_request.h"
#include "sim/engine/simulation.h"
#include "sim/fifo/fifo_sizing.h"
#include "sim/graph/graph_writer.h"
#include "sim/graph/loader.h"
#include "sim/graph/output_file.h"
#include "sim/report/analyze.h"
#include "sim/report/metrics.h"
#include "sim/report/report.h"
#include "sim/shape/infer.h"
#include "sim/transform/downtile.h"

#ifndef STEPSIM_VERSION
#define STEPSIM_VERSION "unknown"
#endif
#ifndef STEPSIM_GIT_COMMIT
#define STEPSIM_GIT_COMMIT ""
#endif

namespace stepsim {

namespace {

namespace po = boost::program_options;

// ------------------------------------------------------------------------------------------
// Option values

using KeyValues = std::vector<std::pair<std::string, std::string>>;

const std::string& string_option(const po::variables_map& vm, const std::string& name) {
  static const std::string none;
  return vm.count(name) ? vm[name].as<std::string>() : none;
}

std::vector<std::string> list_option(const po::variables_map& vm, const std::string& name) {
  return vm.count(name) ? vm[name].as<std::vector<std::string>>() : std::vector<std::string>{};
}

std::pair<std::string, std::string> split_kv(const std::string& s, const std::string& flag) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) throw std::invalid_argument(flag + " expects key=value, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

// A repeatable --NAME KEY=VALUE option, in the order given. The same key twice is an error:
// which of the two values was meant cannot be guessed.
KeyValues key_values(const po::variables_map& vm, const std::string& name) {
  KeyValues kv;
  std::set<std::string> seen;
  for (const std::string& s : list_option(vm, name)) {
    kv.push_back(split_kv(s, "--" + name));
    if (!seen.insert(kv.back().first).second)
      throw std::invalid_argument("--" + name + " '" + kv.back().first + "' is given twice");
  }
  return kv;
}

// A whole-number option in lo..hi, read as 64 bits; anything else names the option and the range.
uint64_t number_option(const po::variables_map& vm, const std::string& name, uint64_t lo, uint64_t hi,
                       uint64_t fallback) {
  if (!vm.count(name)) return fallback;
  const std::string& text = vm[name].as<std::string>();
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || stop != end || v < lo || v > hi)
    throw std::invalid_argument("--" + name + " expects " + (lo == 0 ? "a non-negative integer" : "an integer") +
                                " in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" + text + "'");
  return v;
}

// A decimal option in lo..hi ("0.01", "1e-3"); anything else names the option and the range.
double decimal_option(const po::variables_map& vm, const std::string& name, double lo, double hi, double fallback) {
  if (!vm.count(name)) return fallback;
  const std::string& text = vm[name].as<std::string>();
  std::istringstream in(text);
  double v = 0;
  in >> std::noskipws >> v;
  if (text.empty() || in.fail() || !in.eof() || !std::isfinite(v) || v < lo || v > hi) {
    std::ostringstream range;
    range << lo << ".." << hi;
    throw std::invalid_argument("--" + name + " expects a number in " + range.str() + ", got '" + text + "'");
  }
  return v;
}

// ------------------------------------------------------------------------------------------
// Subcommands: their syntax (options, positional arguments, help text) and their bodies.

struct Streams {
  std::ostream& out;
  std::ostream& err;
};

struct Invocation {
  po::variables_map vm;
  std::vector<std::string> args;  // positional arguments
};

struct Command {
  const char* name;
  const char* arguments;  // the positional arguments, as in the usage line
  const char* summary;    // one line for the overview
  const char* details;    // more for --help ("" if none)
  size_t min_args, max_args;
  const char* missing;  // the error when fewer than min_args are given
  void (*options)(po::options_description&);
  int (*run)(const Invocation&, Streams);
};

po::typed_value<std::string>* text(const char* value_name) { return po::value<std::string>()->value_name(value_name); }
po::typed_value<std::vector<std::string>>* texts(const char* value_name) {
  return po::value<std::vector<std::string>>()->value_name(value_name);
}

void markdown_option(po::options_description& o, const char* what) {
  o.add_options()("markdown", po::bool_switch(), what);
}

// --- ops, presets, layers --------------------------------------------------------------------

int cmd_ops(const Invocation& in, Streams s) {
  if (in.vm["markdown"].as<bool>()) {
    write_ops_markdown(s.out);
    return 0;
  }
  auto ports = [&](const std::vector<PortSpec>& list) {
    if (list.empty()) s.out << "none";
    for (size_t k = 0; k < list.size(); ++k) {
      const PortSpec& p = list[k];
      std::string n = p.name.back() == '*'
                          ? p.name.substr(0, p.name.size() - 1) + "0, " + p.name.substr(0, p.name.size() - 1) + "1, ..."
                          : p.name;
      s.out << (k ? "; " : "") << n << " (" << p.doc << (p.optional ? ", optional" : "") << ")";
    }
  };
  for (const OpInfo* op : OpRegistry::instance().all()) {
    s.out << op->name << "  [" << category_name(op->category) << "]\n  " << op->description << "\n";
    s.out << "  inputs: ";
    ports(op->inputs);
    s.out << "\n  outputs: ";
    ports(op->outputs);
    s.out << "\n  parameters:";
    if (op->params.empty()) s.out << " none";
    s.out << "\n";
    for (const ParamSpec& p : op->params)
      s.out << "    " << p.name << " (" << param_type_name(p.type)
            << (p.required ? ", required" : ", default " + (p.default_value.empty() ? "\"\"" : p.default_value))
            << "): " << p.doc << "\n";
    s.out << "  timing: " << op->timing << "\n";
    s.out << "  units: " << units_text(*op) << "\n\n";
  }
  return 0;
}

int cmd_presets(const Invocation& in, Streams s) {
  if (in.vm["markdown"].as<bool>()) {
    write_presets_markdown(s.out);
    return 0;
  }
  for (const std::string& name : preset_names()) {
    HardwareParams h = load_preset(name);
    s.out << name << "\n";
    auto m = h.to_map();
    for (const auto& f : HardwareParams::fields()) s.out << "  " << f.key << " = " << m[f.key] << " " << f.unit << "\n";
    s.out << "\n";
  }
  return 0;
}

// The technology tables (hw/presets/tech/), or one table's entries with their sources.
int cmd_techs(const Invocation& in, Streams s) {
  if (in.args.empty()) {
    for (const std::string& name : technology_names()) {
      const Technology t = load_technology(name);
      s.out << name << "  (" << t.node_nm << " nm) " << t.description << "\n";
    }
    return 0;
  }
  const Technology t = load_technology(in.args[0]);
  s.out << t.name << " (" << t.node_nm << " nm): " << t.description << "\n";
  for (const Technology::EntryDoc& e : Technology::entries()) {
    const TechEntry& v = t.entry(e.dotted());
    s.out << "  " << e.dotted() << " = " << v.value << " " << e.unit << "\n      " << v.source << "\n";
  }
  return 0;
}

int cmd_layers(const Invocation& in, Streams s) {
  if (in.vm["markdown"].as<bool>()) {
    write_layers_markdown(s.out);
    return 0;
  }
  for (const layers::LayerInfo* l : layers::LayerRegistry::instance().all()) {
    s.out << l->name << "\n  " << l->description << "\n  parameters:\n";
    for (const ParamSpec& p : l->params)
      s.out << "    " << p.name << " (" << param_type_name(p.type) << ", default "
            << (p.default_value.empty() ? "\"\"" : p.default_value) << "): " << p.doc << "\n";
    s.out << "\n";
  }
  return 0;
}

// `stepsim metrics`: the metric table as docs/metrics.md (sim/report/metrics.h).
int cmd_metrics(const Invocation&, Streams s) {
  write_metrics_markdown(s.out);
  return 0;
}

// --- eval ------------------------------------------------------------------------------------

void eval_options(po::options_description& o) {
  o.add_options()("param,p", texts("KEY=VALUE"), "operator parameter (stepsim ops); repeatable")(
      "in,i", texts("[PORT=]TOKENS"),
      "input stream in the text notation ('1 2 S1 D', 'T[16x64] S1 D', 'sel={0} {1,2} S1 D'); "
      "the operator's input ports in order, or the one named by PORT=; repeatable")(
      "outputs", text("N"),
      ("numbered outputs of the operator, 1.." + std::to_string(Selector::kMaxBits) +
       " (default: the largest selector index seen + 1, at least 2)")
          .c_str())("preset", text("NAME")->default_value("step-artifact"), "hardware preset (stepsim presets)");
}

int cmd_eval(const Invocation& in, Streams s) {
  const std::string& op = in.args[0];
  // A selector addresses at most kMaxBits outputs: more could never receive anything.
  const size_t outputs = size_t(number_option(in.vm, "outputs", 1, Selector::kMaxBits, 0));
  std::map<std::string, std::string> params;
  for (const auto& [k, v] : key_values(in.vm, "param")) params[k] = v;
  std::vector<std::pair<std::string, std::string>> ins;  // port (or empty), tokens
  for (const std::string& t : list_option(in.vm, "in")) {
    size_t eq = t.find('=');
    bool named = eq != std::string::npos && eq > 0 && std::all_of(t.begin(), t.begin() + long(eq), [](char c) {
                   return std::isalnum(uint8_t(c)) || c == '_';
                 });
    ins.push_back(named ? std::make_pair(t.substr(0, eq), t.substr(eq + 1)) : std::make_pair(std::string(), t));
    try {
      to_beats(parse_tokens(ins.back().second));
    } catch (const std::exception& e) {
      // The parser's message quotes the bad word; the stream itself is quoted up to 80 characters.
      throw std::invalid_argument("--in '" + (t.size() > 80 ? t.substr(0, 80) + "..." : t) + "': " + e.what());
    }
  }
  EvalResult r = eval_op(op, params, ins, load_preset(string_option(in.vm, "preset")), outputs);
  if (!r.sim.ok) {
    s.err << "error: " << r.sim.error << "\n";
    return 1;
  }
  for (const std::string& p : r.ports) s.out << p << ": " << r.text[p] << "  (shape " << r.shape[p] << ")\n";
  s.out << "cycles: " << r.sim.cycles << " cycles\n";
  return 0;
}

// --- run -------------------------------------------------------------------------------------

void run_options(po::options_description& o) {
  o.add_options()("preset", text("NAME")->default_value("step-artifact"),
                  "hardware preset: step-artifact, hdl-validation or a preset YAML file (stepsim presets)")(
      "tech", text("NAME|FILE")->default_value(kDefaultTechnology),
      "technology table pricing the energy and area: a name (stepsim techs) or a technology YAML file "
      "(docs/energy.md)")(
      "set", texts("KEY=VALUE"),
      "a hardware parameter in its unit (stepsim presets), tech.SECTION.KEY of the technology table, else a "
      "graph parameter, else NODE.PARAM; repeatable")(
      "mode", text("MODE")->default_value("timing"),
      "timing (tiles carry shapes: cycles) or functional (tiles carry values; same cycles)")(
      "report", text("FILE.json"), "write the JSON report (docs/user-guide.md, \"The JSON report\")")(
      "trace", text("FILE.json"), "write a Perfetto/Chrome trace of the operator firings")(
      "out", text("DIR"), "functional mode: folder of the stored tensors' NAME.npy files (default: .)")(
      "shuffle", text("SEED"),
      "elaborate nodes and channels in an order shuffled with SEED, 0..18446744073709551615 "
      "(0: graph order); the results must not change")(
      "impl", text("IMPL"),
      "approx, hls or rtl: implementation of the nodes without impl:; hls or rtl co-simulates on the "
      "cycle-accurate units (docs/cosim.md); approx ignores every impl: of the graph")(
      "cosim-dir", text("DIR"), "co-simulation: write the channels' transaction logs and report.md to DIR")(
      "downtile", text("T|auto"),
      "down-tile the graph to T x T blocks first (hierarchical tiling; nodes it cannot rewrite keep their "
      "logical tiles); auto: the side of the tile units (16 or 4) that puts the most nodes on them. With "
      "--impl the report accounts for every node and compares the stored tensors with the graph's own "
      "(docs/cosim.md)")("vcd", po::bool_switch(),
                         "co-simulation: also write a pin waveform per bridged node to DIR (1 time unit per cycle)");
}

// "4.12 M" for a rate (the unit follows): three significant digits and an SI prefix.
std::string si_text(double v) {
  const char* prefix[] = {" ", " k", " M", " G", " T"};
  int k = 0;
  while (v >= 999.5 && k < 4) {
    v /= 1000;
    ++k;
  }
  std::ostringstream s;
  s << std::fixed << std::setprecision(v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2) << v << prefix[k];
  return s.str();
}

// The status line of a long run on a terminal: simulated cycles and the rate, rewritten in place
// (the simulation calls update() from its progress thread) and erased when the run ends, so that
// nothing of it is left in the output or in a terminal log.
class ProgressLine {
 public:
  explicit ProgressLine(std::ostream& err) : err_(err) {}
  ~ProgressLine() { clear(); }
  void update(const SimProgress& p) {
    if (p.wall_seconds < kQuietSeconds) return;  // short runs show nothing
    err_ << "\rsimulating: " << p.cycles << " cycles so far, " << si_text(double(p.cycles) / p.wall_seconds)
         << "cycles/s\033[K" << std::flush;
    shown_ = true;
  }
  void clear() {
    if (shown_) err_ << "\r\033[K" << std::flush;
    shown_ = false;
  }

 private:
  static constexpr double kQuietSeconds = 1.0;
  std::ostream& err_;
  bool shown_ = false;
};

bool is_terminal(const std::ostream& err) { return &err == &std::cerr && ::isatty(STDERR_FILENO); }

// A co-simulation: the graph all-approximate and with nodes on the units, compared. `downtiled`:
// `g` is the down-tiled `logical` graph (--downtile).
int run_cosim(const Graph& g, const SimOptions& opt, const Invocation& in, const std::string& impl,
              const std::function<void()>& discard_outputs, ProgressLine& progress, Streams s,
              const DowntileResult* downtiled = nullptr, const Graph* logical = nullptr) {
  CosimOptions co;
  co.impl = impl.empty() ? (g.impl.empty() ? "approx" : g.impl) : impl;
  co.dir = string_option(in.vm, "cosim-dir");
  co.vcd = in.vm["vcd"].as<bool>();
  co.downtile = downtiled;
  co.logical = logical;
  CosimReport cr = cosimulate(g, opt, co);
  progress.clear();
  if (!cr.approx.ok || !cr.cosim.ok) {
    discard_outputs();
    // When the all-approximate run fails too, the graph itself is at fault: its error is reported
    // as a plain run would report it. Only a failure of the run with units is the co-simulation's.
    if (!cr.approx.ok)
      s.err << "error: " << cr.approx.error << "\n";
    else
      s.err << "error: " << cosim_failure(co, cr.cosim.error) << "\n";
    return 1;
  }
  // The usual summary (of the run with the units), then the comparison with the approximate run.
  Report rep = make_report(g, opt, cr);
  print_summary(rep, s.out);
  s.out << "\n";
  print_cosim_report(cr, s.out);
  for (const std::string& f : cr.files) s.out << "wrote " << f << "\n";
  if (in.vm.count("report")) write_json_report(rep, string_option(in.vm, "report"));
  if (in.vm.count("trace")) write_trace(g, cr.cosim, string_option(in.vm, "trace"));
  if (!cr.equivalent) {
    s.err << "error: the co-simulation's payload streams or stored tensors differ from the approximate run\n";
    return 1;
  }
  if (!cr.logical_identical) {
    s.err << "error: the down-tiled graph's stored tensors differ from the graph's own (before down-tiling)\n";
    return 1;
  }
  return 0;
}

int run_graph(const Invocation& in, const std::function<void()>& discard_outputs, Streams s) {
  const std::string& file = in.args[0];
  RunRequest request;
  request.preset = string_option(in.vm, "preset");
  request.tech = string_option(in.vm, "tech");
  request.sets = key_values(in.vm, "set");
  request.mode = string_option(in.vm, "mode");
  request.impl = string_option(in.vm, "impl");
  request.shuffle_seed = number_option(in.vm, "shuffle", 0, std::numeric_limits<uint64_t>::max(), 0);
  auto [opt, graph_sets] = prepare_run(request);
  const std::string& impl = request.impl;
  if (in.vm["vcd"].as<bool>() && !in.vm.count("cosim-dir"))
    throw std::invalid_argument("--vcd needs --cosim-dir DIR (where the waveforms go)");
  opt.trace = in.vm.count("trace") > 0;
  opt.output_dir = in.vm.count("out") ? string_option(in.vm, "out") : ".";
  ProgressLine progress(s.err);
  if (is_terminal(s.err)) opt.progress = [&progress](const SimProgress& p) { progress.update(p); };
  Graph g = load_graph(file, graph_sets);
  // --downtile: the graph on blocks of the units' tile, the run on that graph.
  std::optional<DowntileResult> downtiled;
  Graph logical;
  if (in.vm.count("downtile")) {
    logical = g;
    downtiled = downtile_for_units(g, string_option(in.vm, "downtile"), cosim_impl(g, impl), opt.hw);
    g = downtiled->graph;
  }
  // Co-simulation when any node may run on a unit.
  if (!cosim_impl(g, impl).empty()) {
    if (impl.empty() && !g.impl.empty()) opt.default_impl = g.impl;
    return run_cosim(g, opt, in, impl, discard_outputs, progress, s, downtiled ? &*downtiled : nullptr,
                     downtiled ? &logical : nullptr);
  }
  if (impl == "approx") g = all_approximate(std::move(g));
  SimResult r = simulate(g, opt);
  progress.clear();
  if (!r.ok) {
    discard_outputs();
    s.err << "error: " << r.error << "\n";
    return 1;
  }
  Report rep = make_report(g, opt, r);
  print_summary(rep, s.out);
  if (downtiled)
    s.out << "down-tiled to [" << downtiled->tile << " x " << downtiled->tile
          << "] blocks: " << downtiled->blocked_nodes() << " of " << downtiled->nodes.size()
          << " nodes rewritten onto blocks (stepsim downtile --partial names the others)\n";
  if (in.vm.count("report")) write_json_report(rep, string_option(in.vm, "report"));
  if (in.vm.count("trace")) write_trace(g, r, string_option(in.vm, "trace"));
  return 0;
}

int cmd_run(const Invocation& in, Streams s) {
  // The report and trace files describe this run: a failed run (bad options, a malformed graph,
  // a deadlock, an operator error) leaves neither behind, not even one from an earlier run that
  // would look complete. Never the graph itself, and never anything but a regular file.
  auto discard_outputs = [&] {
    for (const char* name : {"report", "trace"}) discard_output_file(string_option(in.vm, name), in.args[0]);
  };
  try {
    return run_graph(in, discard_outputs, s);
  } catch (...) {
    discard_outputs();
    throw;
  }
}

// --- analyze ---------------------------------------------------------------------------------

void analyze_options(po::options_description& o) {
  o.add_options()("set", texts("KEY=VALUE"), "a graph parameter or NODE.PARAM; repeatable")(
      "sym", texts("NAME=VALUE"), "a value for a dynamic-dimension symbol (numbers appear in the metrics); repeatable")(
      "model", text("MODEL")->default_value("paper"), "on-chip requirement formulas: paper or artifact")(
      "json", text("FILE.json"), "write the analysis as JSON (docs/user-guide.md, \"The analysis JSON\")");
}

int cmd_analyze(const Invocation& in, Streams s) {
  std::map<std::string, std::string> syms;
  for (const auto& [k, v] : key_values(in.vm, "sym")) syms[k] = v;
  Graph g = load_graph(in.args[0], key_values(in.vm, "set"));
  Analysis an = analyze_graph(g, string_option(in.vm, "model"), syms);
  print_analysis(g, an, s.out);
  if (in.vm.count("json"))
    write_output_file(string_option(in.vm, "json"), "analysis", analysis_json(g, an).dump(2) + "\n");
  return 0;
}

// --- build, downtile -------------------------------------------------------------------------

// A graph to FILE (saying so) or, without -o, to stdout.
void emit_graph(const Graph& g, const po::variables_map& vm, Streams s) {
  if (!vm.count("out")) {
    s.out << graph_to_yaml(g);
    return;
  }
  const std::string& file = string_option(vm, "out");
  write_graph(g, file);
  s.out << "wrote " << file << " (" << g.nodes.size() << " nodes)\n";
}

void build_options(po::options_description& o) {
  o.add_options()("param,p", texts("KEY=VALUE"), "a layer parameter (stepsim layers); repeatable")(
      "out,o", text("FILE.yaml"), "write the graph to FILE (default: print it)");
}

int cmd_build(const Invocation& in, Streams s) {
  const KeyValues params = key_values(in.vm, "param");
  emit_graph(layers::build_layer(in.args[0], std::map<std::string, std::string>(params.begin(), params.end())), in.vm,
             s);
  return 0;
}

constexpr uint64_t kMaxPhysicalTile = 65536;

void downtile_options(po::options_description& o) {
  o.add_options()("tile", text("T"),
                  ("the physical tile: T x T elements, T in 1.." + std::to_string(kMaxPhysicalTile) +
                   " dividing every tile dimension above it (required)")
                      .c_str())("out,o", text("FILE.yaml"), "write the graph to FILE (default: print it)")(
      "partial", po::bool_switch(),
      "keep a node the pass cannot rewrite at its logical tiles (retiling nodes convert its streams) instead "
      "of failing; each such node is listed on stderr with the reason");
}

int cmd_downtile(const Invocation& in, Streams s) {
  if (!in.vm.count("tile")) throw std::invalid_argument("downtile needs --tile T (T >= 1)");
  const int64_t tile = int64_t(number_option(in.vm, "tile", 1, kMaxPhysicalTile, 0));
  DowntileOptions o;
  o.partial = in.vm["partial"].as<bool>();
  const DowntileResult d = downtile_graph(load_graph(in.args[0], {}), tile, o);
  for (const DowntileNode& n : d.nodes)
    if (!n.blocked) s.err << "kept at its logical tiles: " << n.name << " (" << n.op << "): " << n.reason << "\n";
  emit_graph(d.graph, in.vm, s);
  return 0;
}

// --- sweep -----------------------------------------------------------------------------------

void sweep_options(po::options_description& o) {
  o.add_options()("layer", text("LAYER"), "sweep a layer of the library (stepsim layers) instead of a graph file")(
      "param,p", texts("KEY=V1,V2.."),
      "a layer parameter and its values (a comma inside [] belongs to the value); repeatable")(
      "set", texts("KEY=V1,V2.."),
      "a hardware parameter (with a graph file also a graph or node parameter) and its values; repeatable")(
      "preset", text("NAME")->default_value("step-artifact"), "hardware preset (stepsim presets)")(
      "tech", text("NAME|FILE")->default_value(kDefaultTechnology),
      "technology table of the energy and area columns (stepsim techs)")(
      "csv", text("FILE.csv"), "also write the table as CSV");
}

int cmd_sweep(const Invocation& in, Streams s) {
  SweepSpec spec;
  if (!in.args.empty()) spec.graph_file = in.args[0];
  spec.layer = string_option(in.vm, "layer");
  spec.preset = string_option(in.vm, "preset");
  spec.tech = string_option(in.vm, "tech");
  for (const auto& [k, v] : key_values(in.vm, "param")) spec.params.push_back({k, split_values(v)});
  for (const auto& [k, v] : key_values(in.vm, "set")) spec.sets.push_back({k, split_values(v)});
  // Opened before the first point runs: a CSV path that cannot be written fails at once.
  std::unique_ptr<OutputFile> csv;
  if (in.vm.count("csv")) csv = std::make_unique<OutputFile>(string_option(in.vm, "csv"), "sweep table");
  // Each row as its point finishes (the header once the spec is checked), in the table and the CSV.
  SweepResult r = run_sweep(spec, [&](const SweepResult& so_far) {
    if (so_far.rows.empty()) {
      print_sweep_header(so_far, s.out);
      if (csv) write_sweep_csv_header(so_far, csv->stream());
    } else {
      print_sweep_row(so_far, so_far.rows.back(), s.out);
      if (csv) write_sweep_csv_row(so_far.rows.back(), csv->stream());
    }
  });
  if (csv) {
    csv->commit();
    s.out << "wrote " << csv->path() << "\n";
  }
  if (!r.all_ok()) {
    s.err << "error: " << std::count_if(r.rows.begin(), r.rows.end(), [](const SweepRow& x) { return !x.ok; }) << " of "
          << r.rows.size() << " points failed (status column)\n";
    return 1;
  }
  return 0;
}

// --- size-fifos --------------------------------------------------------------------------------

void size_fifos_options(po::options_description& o) {
  o.add_options()("tolerance", text("FRACTION")->default_value("0.01"),
                  "the sized run may take up to (1 + FRACTION) x the deep-FIFO run's cycles, 0..1")(
      "preset", text("NAME")->default_value("step-artifact"), "hardware preset (stepsim presets)")(
      "set", texts("KEY=VALUE"),
      "a hardware parameter in its unit (stepsim presets), else a graph parameter, else NODE.PARAM; repeatable")(
      "probe-runs", text("N"),
      "runs spent lowering single channels below the verified LP depths, and at most as many re-checking the "
      "depths that deadlock, 0..100000 (default 64; 0: none)")(
      "out,o", text("FILE.yaml"), "write the graph with the sized depths to FILE");
}

int cmd_size_fifos(const Invocation& in, Streams s) {
  const std::string out = string_option(in.vm, "out");
  try {
    RunRequest request;
    request.preset = string_option(in.vm, "preset");
    request.sets = key_values(in.vm, "set");
    FifoSizingOptions o;
    o.tolerance = decimal_option(in.vm, "tolerance", 0, 1, o.tolerance);
    o.probe_runs = uint32_t(number_option(in.vm, "probe-runs", 0, 100000, o.probe_runs));
    auto [sim, graph_sets] = prepare_run(request);
    o.sim = sim;
    const FifoSizingResult r = size_fifos(load_graph(in.args[0], graph_sets), o);
    print_fifo_sizing(r, s.out);
    if (!out.empty()) {
      write_graph(r.graph, out);
      s.out << "wrote " << out << " (" << r.graph.nodes.size() << " nodes)\n";
    }
    return 0;
  } catch (...) {
    // A stale sized graph from an earlier run must not look like this run's.
    discard_output_file(out, in.args[0]);
    throw;
  }
}

// Never reached: cli_main hands these command lines to Python before parsing them.
int cmd_in_python(const Invocation&, Streams) { throw std::logic_error("runs in Python (scripts/cli/python_commands.h)"); }

// ------------------------------------------------------------------------------------------
// The command table, usage and parsing

const std::vector<Command>& commands() {
  static const std::vector<Command> c = {
      {"run", "GRAPH.yaml", "run a graph: cycles, off-chip traffic, compute and on-chip figures",
       "A long run shows its progress on stderr when stderr is a terminal: the simulated cycles so far\n"
       "(the furthest operator clock) and the rate in simulated cycles per second.\n"
       "--impl or an impl: in the graph runs a co-simulation on the cycle-accurate units (docs/cosim.md).",
       1, 1, "run needs a graph file", run_options, cmd_run},
      {"ops", "", "list every operator: ports, parameters, timing rule", "", 0, 0, "",
       [](po::options_description& o) { markdown_option(o, "print docs/operators.md instead"); }, cmd_ops},
      {"eval", "OP", "run one operator on literal token streams", "", 1, 1, "eval needs an operator name", eval_options,
       cmd_eval},
      {"presets", "", "list the hardware presets and every parameter with its unit", "", 0, 0, "",
       [](po::options_description& o) { markdown_option(o, "print docs/presets.md instead"); }, cmd_presets},
      {"techs", "[NAME|FILE]", "list the technology tables (energy, area, leakage), or one's entries and sources",
       "", 0, 1, "", [](po::options_description&) {}, cmd_techs},
      {"analyze", "GRAPH.yaml", "stream shapes and symbolic traffic, FLOPs and on-chip memory (no run)", "", 1, 1,
       "analyze needs a graph file", analyze_options, cmd_analyze},
      {"layers", "", "list the layer library (graphs/layers) and its parameters", "", 0, 0, "",
       [](po::options_description& o) { markdown_option(o, "print docs/layers.md instead"); }, cmd_layers},
      {"metrics", "", "the metrics of a run (sweep columns, DSE objectives): docs/metrics.md", "", 0, 0, "",
       [](po::options_description&) {}, cmd_metrics},
      {"build", "LAYER", "write a layer of the library as a graph file", "", 1, 1,
       "build needs a layer name (see stepsim layers)", build_options, cmd_build},
      {"downtile", "GRAPH.yaml", "rewrite a graph to T x T physical tiles (hierarchical tiling)", "", 1, 1,
       "downtile needs a graph file", downtile_options, cmd_downtile},
      {"sweep", "[GRAPH.yaml]", "timing runs over every combination of values, one table row each",
       "Give a graph file or --layer. Each row is printed when its point finishes; wall [s] is the\n"
       "point's wall-clock time (building or loading the graph and running it). A point that fails,\n"
       "or whose units after the run exceed the fabric's (status \"does not fit: ...\"), does not\n"
       "stop the sweep, but the command exits 1.\n"
       "With --workers local:N or --slurm N (or --workers slurm:N) the points run on N local processes or\n"
       "a Slurm array job (the Python package, `stepsim sweep --slurm 1 --help`; docs/dse.md); the table is\n"
       "printed in the same form once every point is done.",
       0, 1, "", sweep_options, cmd_sweep},
      {"size-fifos", "GRAPH.yaml", "per-channel FIFO depths within a cycle tolerance of deep FIFOs, least bytes",
       "A linear program over the deep-FIFO run's rates and latencies (GLPK), verified and tightened by\n"
       "timing runs; names the channels that deadlock below a depth (docs/fifo-sizing.md).",
       1, 1, "size-fifos needs a graph file", size_fifos_options, cmd_size_fifos},
      {"dse", "SPACE.yaml", "design-space exploration: Optuna search, Pareto front, plots (Python)",
       "Runs in the Python package (python3 -m stepsim dse); `stepsim dse --help` lists its options.\n"
       "docs/dse.md describes the space file, the workers (local:N, slurm:N) and the outputs.",
       1, 1, "dse needs a space file", [](po::options_description&) {}, cmd_in_python},
      {"serve", "MODEL", "a whole model over a request trace: TTFT, TPOT, throughput (Python)",
       "Runs in the Python package (python3 -m stepsim serve); `stepsim serve --help` lists its options.\n"
       "docs/serving.md describes the models, the request traces, the schedule and the outputs.",
       1, 1, "serve needs a model (graphs/models)", [](po::options_description&) {}, cmd_in_python},
  };
  return c;
}

void print_usage(std::ostream& out) {
  out << "usage: stepsim COMMAND [ARGUMENTS] [OPTIONS]\n"
         "       stepsim COMMAND --help     the command's options, with their units\n"
         "       stepsim --version\n\ncommands:\n";
  for (const Command& c : commands()) {
    const std::string head = std::string(c.name) + (*c.arguments ? " " : "") + c.arguments;
    out << "  " << std::left << std::setw(22) << head << std::right << c.summary << "\n";
  }
}

void print_version(std::ostream& out) {
  out << "stepsim " << STEPSIM_VERSION;
  if (*STEPSIM_GIT_COMMIT) out << " (commit " << STEPSIM_GIT_COMMIT << ")";
  out << "\n";
}

po::options_description described_options(const Command& c) {
  po::options_description o("options", 100, 50);
  c.options(o);
  o.add_options()("help,h", "print this help");
  return o;
}

void print_help(const Command& c, std::ostream& out) {
  out << "usage: stepsim " << c.name << (*c.arguments ? " " : "") << c.arguments << " [OPTIONS]\n" << c.summary << "\n";
  if (*c.details) out << "\n" << c.details << "\n";
  std::ostringstream table;
  table << described_options(c);
  // The library pads wrapped lines with spaces; drop them, and end with a newline.
  std::istringstream lines(table.str());
  out << "\n";
  for (std::string line; std::getline(lines, line);) out << line.substr(0, line.find_last_not_of(' ') + 1) << "\n";
}

// The library's error, reworded to name the command and the option in our own terms.
[[noreturn]] void option_error(const Command& c, const po::error& e) {
  const std::string cmd = c.name;
  if (const auto* u = dynamic_cast<const po::unknown_option*>(&e))
    throw std::invalid_argument(cmd + ": unknown option '" + u->get_option_name() + "' (stepsim " + cmd + " --help)");
  if (const auto* s = dynamic_cast<const po::invalid_command_line_syntax*>(&e)) {
    const std::string opt = s->get_option_name();
    switch (s->kind()) {
      case po::invalid_command_line_syntax::missing_parameter:
      case po::invalid_command_line_syntax::empty_adjacent_parameter:
        throw std::invalid_argument(cmd + ": " + opt + " needs a value");
      case po::invalid_command_line_syntax::extra_parameter:
        throw std::invalid_argument(cmd + ": " + opt + " takes no value");
      default:
        break;
    }
  }
  if (const auto* m = dynamic_cast<const po::multiple_occurrences*>(&e))
    throw std::invalid_argument(cmd + ": " + m->get_option_name() + " is given twice");
  throw std::invalid_argument(cmd + ": " + e.what());
}

// "--trace", "--trace=x" or "-o": an option of `options` (long names are kept without "--").
bool names_an_option(const po::options_description& options, const std::string& token) {
  if (token.rfind("--", 0) == 0) return options.find_nothrow(token.substr(2, token.find('=') - 2), false);
  return token.size() >= 2 && token[0] == '-' && options.find_nothrow(token.substr(0, 2), false);
}

Invocation parse_command_line(const Command& c, const std::vector<std::string>& args) {
  po::options_description all = described_options(c);
  all.add_options()("arguments", po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add("arguments", -1);
  Invocation in;
  try {
    // No abbreviations: "--rep" is not "--report" (a typo must not pick an option).
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::parsed_options parsed = po::command_line_parser(args).options(all).positional(positional).style(style).run();
    // An empty value, or the next option taken as the value ("--report --trace t.json").
    for (const po::option& o : parsed.options) {
      if (o.string_key == "arguments" || o.value.size() != 1) continue;
      const std::string& v = o.value[0];
      if (v.empty() || names_an_option(all, v))
        throw std::invalid_argument(std::string(c.name) + ": " +
                                    o.original_tokens.front().substr(0, o.original_tokens.front().find('=')) +
                                    " needs a value");
    }
    po::store(parsed, in.vm);
    po::notify(in.vm);
  } catch (const po::error& e) {
    option_error(c, e);
  }
  in.args = list_option(in.vm, "arguments");
  return in;
}

const Command* find_command(const std::string& name) {
  for (const Command& c : commands())
    if (name == c.name) return &c;
  return nullptr;
}

int run_command(const Command& c, const std::vector<std::string>& args, Streams s) {
  Invocation in = parse_command_line(c, args);
  if (in.vm.count("help")) {
    print_help(c, s.out);
    return 0;
  }
  if (in.args.size() < c.min_args) throw std::invalid_argument(c.missing);
  if (in.args.size() > c.max_args)
    throw std::invalid_argument(std::string(c.name) + ": unexpected argument '" + in.args[c.max_args] +
                                "' (usage: stepsim " + c.name + (*c.arguments ? " " : "") + c.arguments +
                                " [OPTIONS])");
  return c.run(in, s);
}

}  // namespace

int cli_main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  if (args.empty()) {
    print_usage(err);
    return 2;
  }
  const std::string& first = args[0];
  if (first == "-h" || first == "--help" || first == "help") {
    print_usage(out);
    return 0;
  }
  if (first == "--version") {
    print_version(out);
    return 0;
  }
  if (runs_in_python(args)) return run_in_python(args, err);
  const Command* c = find_command(first);
  if (!c) {
    err << (first[0] == '-' ? "error: unknown option '" : "error: unknown command '") << first << "'\n";
    print_usage(err);
    return 2;
  }
  try {
    return run_command(*c, std::vector<std::string>(args.begin() + 1, args.end()), Streams{out, err});
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace stepsim
