#include "sim/cli.h"
#include "sim/downtile.h"
#include "sim/sweep.h"
#include "sim/analyze.h"
#include "sim/graph_writer.h"
#include "graphs/layers/layer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/ops/op.h"
#include "sim/cosim.h"
#include "sim/docs.h"
#include "sim/eval.h"
#include "sim/loader.h"
#include "sim/report.h"
#include "sim/simulation.h"

namespace stepsim {

namespace {

const char* kUsage =
    "usage:\n"
    "  stepsim run GRAPH.yaml [--preset P] [--set key=value]... [--mode timing|functional]\n"
    "                         [--report FILE.json] [--trace FILE.json] [--out DIR] [--shuffle SEED]\n"
    "                         [--impl approx|hls|rtl] [--cosim-dir DIR] [--vcd]\n"
    "                         (--impl or an impl: in the graph: co-simulation on the cycle-accurate\n"
    "                          units, compared with the all-approximate run; docs/cosim.md)\n"
    "  stepsim ops [--markdown]         list every operator: ports, parameters, timing\n"
    "  stepsim eval OP [--param k=v]... --in [PORT=]'TOKENS'... [--outputs N] [--preset P]\n"
    "  stepsim presets [--markdown]     list hardware presets and their parameters\n"
    "  stepsim analyze GRAPH.yaml [--set key=value]... [--sym NAME=VALUE]... [--model paper|artifact]\n"
    "                         [--json FILE]   stream shapes and symbolic traffic/FLOPs/on-chip metrics\n"
    "  stepsim layers [--markdown]      list the layer library (graphs/layers) and its parameters\n"
    "  stepsim build LAYER [--param k=v]... [-o FILE.yaml]   write a layer as a graph file\n"
    "  stepsim downtile GRAPH.yaml --tile T [-o FILE.yaml]   rewrite to T x T physical tiles (hierarchical tiling)\n"
    "  stepsim sweep (GRAPH.yaml | --layer LAYER) [--param k=v1,v2..]... [--set k=v1,v2..]... [--preset P]\n"
    "                [--csv FILE]      timing runs over every combination, one table row each\n";

struct Args {
  std::vector<std::string> v;
  size_t i = 0;
  bool more() const { return i < v.size(); }
  std::string next(const std::string& flag) {
    if (i >= v.size()) throw std::invalid_argument(flag + " needs a value");
    return v[i++];
  }
};

// A non-negative integer option value ("--shuffle 3"), with the option named on error.
uint64_t to_count(const std::string& flag, const std::string& v) {
  try {
    size_t pos = 0;
    if (v.empty() || v[0] == '-') throw std::invalid_argument("");
    uint64_t x = std::stoull(v, &pos);
    if (pos != v.size()) throw std::invalid_argument("");
    return x;
  } catch (const std::exception&) {
    throw std::invalid_argument(flag + " expects a non-negative integer, got '" + v + "'");
  }
}

std::pair<std::string, std::string> split_kv(const std::string& s, const std::string& flag) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) throw std::invalid_argument(flag + " expects key=value, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

int cmd_ops(std::ostream& out) {
  for (const OpInfo* op : OpRegistry::instance().all()) {
    out << op->name << "  [" << op->category << "]\n  " << op->description << "\n";
    out << "  inputs: ";
    if (op->inputs.empty()) out << "none";
    for (size_t k = 0; k < op->inputs.size(); ++k) {
      const PortSpec& p = op->inputs[k];
      std::string n = p.name.back() == '*' ? p.name.substr(0, p.name.size() - 1) + "0, " +
                                                 p.name.substr(0, p.name.size() - 1) + "1, ..."
                                           : p.name;
      out << (k ? "; " : "") << n << " (" << p.doc << (p.optional ? ", optional" : "") << ")";
    }
    out << "\n  outputs: ";
    if (op->outputs.empty()) out << "none";
    for (size_t k = 0; k < op->outputs.size(); ++k) {
      const PortSpec& p = op->outputs[k];
      std::string n = p.name.back() == '*' ? p.name.substr(0, p.name.size() - 1) + "0, " +
                                                 p.name.substr(0, p.name.size() - 1) + "1, ..."
                                           : p.name;
      out << (k ? "; " : "") << n << " (" << p.doc << (p.optional ? ", optional" : "") << ")";
    }
    out << "\n  parameters:";
    if (op->params.empty()) out << " none";
    out << "\n";
    for (const ParamSpec& p : op->params)
      out << "    " << p.name << " (" << param_type_name(p.type)
          << (p.required ? ", required" : ", default " + (p.default_value.empty() ? "\"\"" : p.default_value)) << "): "
          << p.doc << "\n";
    out << "  timing: " << op->timing << "\n\n";
  }
  return 0;
}

int cmd_presets(std::ostream& out) {
  for (const std::string& name : preset_names()) {
    HardwareParams h = load_preset(name);
    out << name << "\n";
    auto m = h.to_map();
    for (const auto& f : HardwareParams::fields()) out << "  " << f.key << " = " << m[f.key] << " " << f.unit << "\n";
    out << "\n";
  }
  return 0;
}

int cmd_eval(Args& a, std::ostream& out, std::ostream& err) {
  if (!a.more()) throw std::invalid_argument("eval needs an operator name");
  const std::string op = a.next("eval");
  std::map<std::string, std::string> params;
  std::vector<std::pair<std::string, std::string>> ins;  // port (or empty), tokens
  std::string preset = "step-artifact";
  size_t outputs = 0;
  while (a.more()) {
    std::string f = a.next("");
    if (f == "--param" || f == "-p") {
      auto kv = split_kv(a.next(f), f);
      params[kv.first] = kv.second;
    } else if (f == "--in" || f == "-i") {
      std::string s = a.next(f);
      size_t eq = s.find('=');
      bool named = eq != std::string::npos && eq > 0 &&
                   std::all_of(s.begin(), s.begin() + long(eq), [](char c) { return std::isalnum(uint8_t(c)) || c == '_'; });
      ins.push_back(named ? std::make_pair(s.substr(0, eq), s.substr(eq + 1)) : std::make_pair(std::string(), s));
      try {
        to_beats(parse_tokens(ins.back().second));
      } catch (const std::exception& e) {
        throw std::invalid_argument(f + " '" + s + "': " + e.what());
      }
    } else if (f == "--outputs") {
      outputs = size_t(to_count(f, a.next(f)));
    } else if (f == "--preset") {
      preset = a.next(f);
    } else {
      throw std::invalid_argument("eval: unknown option '" + f + "'");
    }
  }
  EvalResult r = eval_op(op, params, ins, load_preset(preset), outputs);
  if (!r.sim.ok) {
    err << "error: " << r.sim.error << "\n";
    return 1;
  }
  for (const std::string& p : r.ports) out << p << ": " << r.text[p] << "  (shape " << r.shape[p] << ")\n";
  out << "cycles: " << r.sim.cycles << " cycles\n";
  return 0;
}

int cmd_run(Args& a, std::ostream& out, std::ostream& err) {
  if (!a.more()) throw std::invalid_argument("run needs a graph file");
  const std::string file = a.next("run");
  std::string preset = "step-artifact", mode = "timing", report_file, trace_file, out_dir, impl, cosim_dir;
  bool vcd = false;
  uint64_t shuffle = 0;
  std::vector<std::pair<std::string, std::string>> sets;
  while (a.more()) {
    std::string f = a.next("");
    if (f == "--preset") preset = a.next(f);
    else if (f == "--set") sets.push_back(split_kv(a.next(f), f));
    else if (f == "--mode") mode = a.next(f);
    else if (f == "--report") report_file = a.next(f);
    else if (f == "--trace") trace_file = a.next(f);
    else if (f == "--out") out_dir = a.next(f);
    else if (f == "--shuffle") shuffle = to_count(f, a.next(f));
    else if (f == "--impl") impl = a.next(f);
    else if (f == "--cosim-dir") cosim_dir = a.next(f);
    else if (f == "--vcd") vcd = true;
    else throw std::invalid_argument("run: unknown option '" + f + "'");
  }
  // The report and trace files describe this run: a failed run (bad options, a malformed graph,
  // a deadlock, an operator error) leaves neither behind, not even one from an earlier run that
  // would look complete.
  auto discard_outputs = [&] {
    for (const std::string& p : {report_file, trace_file}) {
      std::error_code ec;
      if (p.empty() || std::filesystem::equivalent(p, file, ec)) continue;  // never the graph itself
      std::filesystem::remove(p, ec);
    }
  };
  try {
    if (mode != "timing" && mode != "functional")
      throw std::invalid_argument("--mode must be timing or functional, got '" + mode + "'");
    SimOptions opt;
    opt.hw = load_preset(preset);
    opt.functional = mode == "functional";
    opt.trace = !trace_file.empty();
    opt.shuffle_seed = shuffle;
    opt.output_dir = out_dir.empty() ? "." : out_dir;
    // --set: hardware parameters first, then graph parameters and node parameters.
    std::vector<std::pair<std::string, std::string>> graph_sets;
    for (const auto& [k, v] : sets) {
      if (HardwareParams::has_field(k)) opt.hw.set(k, v);
      else graph_sets.push_back({k, v});
    }
    Graph g = load_graph(file, graph_sets);
    if (!impl.empty() && impl != "approx" && impl != "hls" && impl != "rtl")
      throw std::invalid_argument("--impl must be approx, hls or rtl, got '" + impl + "'");
    if (vcd && cosim_dir.empty()) throw std::invalid_argument("--vcd needs --cosim-dir DIR (where the waveforms go)");
    // Co-simulation when any node may run on a unit.
    std::string unit_impl = impl.empty() ? g.impl : impl;
    if (unit_impl == "approx") unit_impl.clear();
    if (impl != "approx")
      for (const NodeSpec& n : g.nodes)
        if (unit_impl.empty() && !n.impl.empty() && n.impl != "approx") unit_impl = n.impl;
    if (!unit_impl.empty()) {
      if (impl.empty() && !g.impl.empty()) opt.default_impl = g.impl;
      CosimOptions co;
      co.impl = impl.empty() ? (g.impl.empty() ? "approx" : g.impl) : impl;
      co.dir = cosim_dir;
      co.vcd = vcd;
      CosimReport cr = cosimulate(g, opt, co);
      if (!cr.approx.ok || !cr.cosim.ok) {
        discard_outputs();
        err << "error: " << (cr.cosim.ok ? "approximate run: " + cr.approx.error : "co-simulation: " + cr.cosim.error)
            << "\n";
        return 1;
      }
      print_cosim_report(cr, out);
      for (const std::string& f : cr.files) out << "wrote " << f << "\n";
      Report rep = make_report(g, opt, cr.cosim);
      if (!report_file.empty()) write_json_report(rep, report_file);
      if (!trace_file.empty()) write_trace(g, cr.cosim, trace_file);
      if (!cr.equivalent) {
        err << "error: the co-simulation's payload streams or stored tensors differ from the approximate run\n";
        return 1;
      }
      return 0;
    }
    if (impl == "approx") {
      g.impl.clear();
      for (NodeSpec& n : g.nodes) n.impl.clear();
    }
    SimResult r = simulate(g, opt);
    if (!r.ok) {
      discard_outputs();
      err << "error: " << r.error << "\n";
      return 1;
    }
    Report rep = make_report(g, opt, r);
    print_summary(rep, out);
    if (!report_file.empty()) write_json_report(rep, report_file);
    if (!trace_file.empty()) write_trace(g, r, trace_file);
    return 0;
  } catch (...) {
    discard_outputs();
    throw;
  }
}

int cmd_analyze(Args& a, std::ostream& out) {
  if (!a.more()) throw std::invalid_argument("analyze needs a graph file");
  const std::string file = a.next("analyze");
  std::string model = "paper", json_file;
  std::vector<std::pair<std::string, std::string>> sets;
  std::map<std::string, std::string> syms;
  while (a.more()) {
    std::string f = a.next("");
    if (f == "--set") sets.push_back(split_kv(a.next(f), f));
    else if (f == "--sym") syms.insert(split_kv(a.next(f), f));
    else if (f == "--model") model = a.next(f);
    else if (f == "--json") json_file = a.next(f);
    else throw std::invalid_argument("analyze: unknown option '" + f + "'");
  }
  Graph g = load_graph(file, sets);
  Analysis an = analyze_graph(g, model, syms);
  print_analysis(g, an, out);
  if (!json_file.empty()) {
    const std::string tmp = json_file + ".tmp";
    {
      std::ofstream f(tmp);
      f << analysis_json(g, an).dump(2) << "\n";
      if (!f) throw std::runtime_error("cannot write '" + json_file + "'");
    }
    std::filesystem::rename(tmp, json_file);
  }
  return 0;
}

int cmd_layers(std::ostream& out) {
  for (const layers::LayerInfo* l : layers::LayerRegistry::instance().all()) {
    out << l->name << "\n  " << l->description << "\n  parameters:\n";
    for (const ParamSpec& p : l->params)
      out << "    " << p.name << " (" << param_type_name(p.type) << ", default "
          << (p.default_value.empty() ? "\"\"" : p.default_value) << "): " << p.doc << "\n";
    out << "\n";
  }
  return 0;
}

int cmd_build(Args& a, std::ostream& out) {
  if (!a.more()) throw std::invalid_argument("build needs a layer name (see stepsim layers)");
  const std::string layer = a.next("build");
  std::map<std::string, std::string> params;
  std::string file;
  while (a.more()) {
    std::string f = a.next("");
    if (f == "--param" || f == "-p") params.insert(split_kv(a.next(f), f));
    else if (f == "-o" || f == "--out") file = a.next(f);
    else throw std::invalid_argument("build: unknown option '" + f + "'");
  }
  Graph g = layers::build_layer(layer, params);
  if (file.empty()) out << graph_to_yaml(g);
  else write_graph(g, file);
  return 0;
}

int cmd_downtile(Args& a, std::ostream& out) {
  if (!a.more()) throw std::invalid_argument("downtile needs a graph file");
  const std::string file = a.next("downtile");
  std::string dest;
  int64_t tile = 0;
  while (a.more()) {
    std::string f = a.next("");
    if (f == "--tile") tile = std::stoll(a.next(f));
    else if (f == "-o" || f == "--out") dest = a.next(f);
    else throw std::invalid_argument("downtile: unknown option '" + f + "'");
  }
  if (tile < 1) throw std::invalid_argument("downtile needs --tile T (T >= 1)");
  Graph g = downtile(load_graph(file, {}), tile);
  if (dest.empty()) out << graph_to_yaml(g);
  else write_graph(g, dest);
  return 0;
}

int cmd_sweep(Args& a, std::ostream& out, std::ostream& err) {
  SweepSpec spec;
  std::string csv;
  while (a.more()) {
    std::string f = a.next("");
    if (f == "--layer") spec.layer = a.next(f);
    else if (f == "--param" || f == "-p" || f == "--set") {
      auto [k, v] = split_kv(a.next(f), f);
      (f == "--set" ? spec.sets : spec.params).push_back({k, split_values(v)});
    } else if (f == "--preset") spec.preset = a.next(f);
    else if (f == "--csv") csv = a.next(f);
    else if (!f.empty() && f[0] != '-' && spec.graph_file.empty()) spec.graph_file = f;
    else throw std::invalid_argument("sweep: unknown option '" + f + "'");
  }
  SweepResult r = run_sweep(spec);
  print_sweep(r, out);
  if (!csv.empty()) {
    write_sweep_csv(r, csv);
    out << "wrote " << csv << "\n";
  }
  if (!r.all_ok()) {
    err << "error: " << std::count_if(r.rows.begin(), r.rows.end(), [](const SweepRow& x) { return !x.ok; })
        << " of " << r.rows.size() << " points failed (status column)\n";
    return 1;
  }
  return 0;
}

}  // namespace

int cli_main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  Args a;
  for (int i = 1; i < argc; ++i) a.v.push_back(argv[i]);
  if (!a.more() || a.v[0] == "-h" || a.v[0] == "--help") {
    (a.more() ? out : err) << kUsage;
    return a.more() ? 0 : 2;
  }
  const std::string cmd = a.next("");
  try {
    if (cmd == "ops" || cmd == "presets") {
      // --markdown: the generated reference docs (docs/operators.md, docs/presets.md).
      bool markdown = false;
      while (a.more()) {
        std::string f = a.next("");
        if (f != "--markdown") throw std::invalid_argument(cmd + ": unknown option '" + f + "'");
        markdown = true;
      }
      if (markdown) {
        if (cmd == "ops") write_ops_markdown(out);
        else write_presets_markdown(out);
        return 0;
      }
      return cmd == "ops" ? cmd_ops(out) : cmd_presets(out);
    }
    if (cmd == "eval") return cmd_eval(a, out, err);
    if (cmd == "run") return cmd_run(a, out, err);
    if (cmd == "analyze") return cmd_analyze(a, out);
    if (cmd == "layers") {
      if (a.more()) {
        const std::string f = a.next("");
        if (f != "--markdown") throw std::invalid_argument("layers: unknown option '" + f + "'");
        write_layers_markdown(out);
        return 0;
      }
      return cmd_layers(out);
    }
    if (cmd == "build") return cmd_build(a, out);
    if (cmd == "downtile") return cmd_downtile(a, out);
    if (cmd == "sweep") return cmd_sweep(a, out, err);
    err << "unknown command '" << cmd << "'\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace stepsim
