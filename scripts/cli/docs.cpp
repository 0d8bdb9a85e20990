#include "scripts/cli/docs.h"

#include "graphs/layers/layer.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "hw/bridge/unit_bridge.h"
#include "hw/bridge/unit_ops.h"
#include "hw/functions/functions.h"
#include "hw/ops/op.h"
#include "hw/presets/hardware.h"

namespace stepsim {

namespace {

// Text for a Markdown table cell: '|' escaped everywhere; '*' and '<' escaped outside `code`
// spans (so "2*M*K*N" does not turn italic and "Buffer<S>" is not read as HTML).
std::string cell(const std::string& s) {
  std::string o;
  bool code = false;
  for (char c : s) {
    if (c == '`') code = !code;
    if (c == '|')
      o += "\\|";
    else if (c == '\n')
      o += ' ';
    else if (!code && c == '*')
      o += "\\*";
    else if (!code && c == '<')
      o += "&lt;";
    else
      o += c;
  }
  return o;
}

std::string port_name(const PortSpec& p) {
  if (!p.name.empty() && p.name.back() == '*') {
    const std::string base = p.name.substr(0, p.name.size() - 1);
    return "`" + base + "0`, `" + base + "1`, ...";
  }
  return "`" + p.name + "`";
}

std::string anchor(const std::string& heading) {
  std::string a;
  for (char c : heading) {
    if (std::isalnum(uint8_t(c)))
      a += char(std::tolower(uint8_t(c)));
    else if (c == ' ' || c == '-')
      a += '-';
  }
  return a;
}

// Categories in the paper's order (§2): the order of OpCategory.
std::vector<std::string> category_order() {
  std::vector<std::string> order;
  for (int c = 0; c < kNumOpCategories; ++c) order.push_back(category_name(OpCategory(c)));
  return order;
}

const std::map<std::string, std::string>& category_intro() {
  static const std::map<std::string, std::string> m = {
      {"off-chip memory",
       "Stream tiled tensors between off-chip memory (HBM) and the fabric (paper §2.1). The tensors are declared "
       "in the graph's `tensors:` section; every tile becomes a strided block of `hbm.request_bytes` requests "
       "through the HBM model (docs/timing-model.md, \"Off-chip path\")."},
      {"on-chip memory",
       "Convert between streams and buffers in on-chip memory units (paper §2.2). Buffer references may pass "
       "through routing and shape operators (except Reshape) between Bufferize and Streamify."},
      {"routing",
       "Data-dependent routing and merging of any element type (paper §2.3, plus the artifact's Broadcast and "
       "Parallelize). Decisions that depend on arrival order are taken in model time, ties to the lowest input."},
      {"higher-order",
       "Apply a tile function to the elements of a stream (paper §2.4). These nodes get a compute bandwidth "
       "(`compute_bw` in the node, default the preset's `compute_bw`) and compute units; the functions are listed "
       "under [Tile functions](#tile-functions)."},
      {"shape",
       "Change only the stop tokens, i.e. the logical shape of a stream (paper §2.5); Repeat and Zip are grouped "
       "here too."},
      {"address generation",
       "Turn routing metadata into tile addresses for RandomOffChipLoad (the artifact's utility operators, "
       "step-paper-notes §2.6), e.g. the weights of the expert a time-multiplexed region serves next."},
      {"source/sink",
       "Test-bench ends: a Source emits a stream from the graph's `streams:` section, a Sink records what "
       "arrives."},
  };
  return m;
}

template <typename F>
void function_table(std::ostream& out, const std::string& title, FunctionFamily family,
                    const std::vector<std::string>& names, F get) {
  out << "### " << title << "\n\n| function | inputs | description | units |\n|---|---|---|---|\n";
  for (const std::string& n : names) {
    const auto& f = get(n);
    const std::string units =
        f.lanes.any() ? bridge::lane_units(f.lanes, family) + " (" + bridge::lane_tiles(f.lanes) + ")" : "none";
    out << "| `" << n << "` | " << f.arity << " | " << cell(f.description) << " | " << cell(units) << " |\n";
  }
  out << "\n";
}

// "1.000000" -> "1", "0.500000" -> "0.5"; anything else unchanged.
std::string plain_number(std::string v) {
  if (v.find('.') == std::string::npos || v.find_first_not_of("0123456789.") != std::string::npos) return v;
  while (v.back() == '0') v.pop_back();
  if (v.back() == '.') v.pop_back();
  return v;
}

std::string preset_file(const std::string& name) {
  return std::string(STEPSIM_SOURCE_DIR) + "/hw/presets/" + name + ".yaml";
}

// The leading '#' comment lines of a file, joined into one paragraph.
std::string header_comment(const std::string& path) {
  std::ifstream f(path);
  std::string line, text;
  while (std::getline(f, line) && !line.empty() && line[0] == '#') {
    size_t a = line.find_first_not_of("# ");
    if (a == std::string::npos) continue;
    text += (text.empty() ? "" : " ") + line.substr(a);
  }
  return text.empty() ? "(no description)" : cell(text);
}

}  // namespace

std::string units_text(const OpInfo& op, const std::string& impl) {
  bridge::find_unit_impl("hls");  // the built-in implementation registers its runners on first use
  std::vector<std::string> seen;
  std::string s;
  for (const UnitRunner& u : op.units) {
    if (!impl.empty() && u.impl != impl) continue;
    const std::string text = u.kind + (u.fn.empty() ? "" : " (fn " + u.fn + ")");
    if (std::find(seen.begin(), seen.end(), text) != seen.end()) continue;
    seen.push_back(text);
    s += (s.empty() ? "" : "; ") + text;
  }
  return s.empty() ? "none" : s;
}

void write_ops_markdown(std::ostream& out) {
  const std::vector<const OpInfo*> ops = OpRegistry::instance().all();
  const std::vector<std::string> cats = category_order();
  out << "<!-- Generated by `stepsim ops --markdown` (scripts/gen_docs.sh) from the operator registry\n"
         "     (hw/ops/*.cpp) and the tile-function libraries (hw/functions). Do not edit by hand: change the\n"
         "     registry or scripts/cli/docs.cpp and run scripts/gen_docs.sh; testbench/docs fails when this file is "
         "stale. -->\n"
         "# Operator reference\n\n"
         "Every STeP operator the simulator implements, with its ports, parameters and timing rule, as `stepsim "
         "ops` prints them. In a graph file an operator is a node `{name: N, op: OP, params: {...}, inputs: "
         "{port: producer.port}}` (docs/user-guide.md); `stepsim eval OP --param k=v --in 'TOKENS'` runs one "
         "operator on literal streams.\n\n"
         "Conventions:\n\n"
         "- Shapes follow the paper: a rank-a stream has shape `[D_a, ..., D_0]`, outermost first; stop token "
         "`Sn` ends dimension n, `D` ends the stream.\n"
         "- A port written `in0`, `in1`, ... is numbered: connect as many as the node needs. An optional port "
         "may be left unconnected.\n"
         "- Parameter values are YAML scalars or lists (`[1, 2]`); a parameter without a default is required.\n"
         "- Timing rules name hardware parameters of the preset (`onchip_bw`, `routing_switch_cycles`, ...; "
         "[presets.md](presets.md)). \"Memory-unit\" terms are `ceil(bytes / onchip_bw)` and apply only where the "
         "data passes through an on-chip memory unit; every channel hop adds `send_latency`. The full model is "
         "in [timing-model.md](timing-model.md).\n"
         "- Where the paper and the reference simulator disagree, the operators follow the paper; the choices are "
         "listed in [semantics.md](semantics.md).\n\n";
  // Index.
  for (const std::string& c : cats) {
    std::vector<std::string> names;
    for (const OpInfo* op : ops)
      if (category_name(op->category) == c) names.push_back("[" + op->name + "](#" + anchor(op->name) + ")");
    if (names.empty()) continue;
    out << "- **" << c << "**: ";
    for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << names[i];
    out << "\n";
  }
  out << "- [Tile functions](#tile-functions): Map, Accum/Scan and FlatMap functions\n\n";

  for (const std::string& c : cats) {
    bool any = std::any_of(ops.begin(), ops.end(), [&](const OpInfo* op) { return category_name(op->category) == c; });
    if (!any) continue;
    std::string title = c;
    title[0] = char(std::toupper(uint8_t(title[0])));
    out << "## " << title << " operators\n\n";
    auto intro = category_intro().find(c);
    if (intro != category_intro().end()) out << intro->second << "\n\n";
    for (const OpInfo* op : ops) {
      if (category_name(op->category) != c) continue;
      out << "### " << op->name << "\n\n" << cell(op->description) << "\n\n";
      out << "| port | direction | description |\n|---|---|---|\n";
      if (op->inputs.empty() && op->outputs.empty()) out << "| - | - | no ports |\n";
      for (const PortSpec& p : op->inputs)
        out << "| " << port_name(p) << " | input" << (p.optional ? " (optional)" : "") << " | " << cell(p.doc)
            << " |\n";
      for (const PortSpec& p : op->outputs)
        out << "| " << port_name(p) << " | output" << (p.optional ? " (optional)" : "") << " | " << cell(p.doc)
            << " |\n";
      out << "\n";
      if (op->params.empty()) {
        out << "Parameters: none.\n\n";
      } else {
        out << "| parameter | type | default | allowed | description |\n|---|---|---|---|---|\n";
        for (const ParamSpec& p : op->params)
          out << "| `" << p.name << "` | " << param_type_name(p.type) << " | "
              << (p.required ? std::string("required")
                             : "`" + (p.default_value.empty() ? std::string("\"\"") : p.default_value) + "`")
              << " | " << cell(allowed_values(p)) << " | " << cell(p.doc) << " |\n";
        out << "\n";
      }
      out << "**Timing.** " << cell(op->timing) << "\n\n";
      out << "**Cycle-accurate units** ([cosim.md](cosim.md)): " << units_text(*op, "hls") << "\n\n";
      if (op->uses_compute) out << "Higher-order node: takes `compute_bw` FLOPs/cycle and compute units.\n\n";
    }
  }

  out << "## Tile functions\n\n"
         "The `fn` parameter of Map, Accum/Scan and FlatMap names one of these functions (hw/functions/"
         "functions.h has the exact numerics: bf16 storage, fp32 arithmetic in a fixed order, round to nearest "
         "even). The FLOP count is what the timing model charges. `units` names the units that compute the function bit "
         "for bit in co-simulation ([cosim.md](cosim.md)) and the tiles they take: the function's lanes "
         "(hw/functions/unit_lanes.h).\n\n";
  function_table(out, "Map functions", FunctionFamily::kMap, map_function_names(),
                 [](const std::string& n) -> const MapFunction& { return map_function(n); });
  function_table(out, "Accum and Scan functions", FunctionFamily::kAccum, accum_function_names(),
                 [](const std::string& n) -> const AccumFunction& { return accum_function(n); });
  function_table(out, "FlatMap functions", FunctionFamily::kFlatMap, flatmap_function_names(),
                 [](const std::string& n) -> const FlatMapFunction& { return flatmap_function(n); });
}

void write_presets_markdown(std::ostream& out) {
  // The default preset first, then the others by name.
  std::vector<std::string> names = preset_names();
  std::stable_partition(names.begin(), names.end(), [](const std::string& n) { return n == "step-artifact"; });
  std::vector<std::map<std::string, std::string>> values;
  for (const std::string& n : names) values.push_back(load_preset(n).to_map());
  out << "<!-- Generated by `stepsim presets --markdown` (scripts/gen_docs.sh) from the parameter rows\n"
         "     (hw/presets/hardware_params.def, hbm_params.def) and the preset files hw/presets/*.yaml.\n"
         "     Do not edit by hand; testbench/docs fails when this file is stale. -->\n"
         "# Hardware presets and parameters\n\n"
         "Every timing and fabric constant of the model is a named parameter of a hardware preset "
         "(`hw/presets/NAME.yaml`; nested keys such as `hbm.channels` are written as `hbm: {channels: 32}` in the "
         "file). Choose a preset with `stepsim run --preset NAME` (default `step-artifact`) or a path to your own "
         "YAML file, and override any parameter with `--set key=value`. How each parameter enters the timing is "
         "described in [timing-model.md](timing-model.md).\n\n"
         "Presets (the header comment of each file):\n\n";
  for (const std::string& n : names) out << "- `" << n << "`: " << header_comment(preset_file(n)) << "\n";
  out << "\n"
         "In the last column RS = `shared/spec/reference-simulator-notes.md`, PN = "
         "`shared/spec/step-paper-notes.md`, ARCH = `shared/spec/architecture.md`.\n\n";
  out << "| parameter | unit | allowed |";
  for (const std::string& n : names) out << " " << n << " |";
  out << " meaning | where the value comes from |\n|---|---|---|";
  for (size_t i = 0; i < names.size(); ++i) out << "---|";
  out << "---|---|\n";
  for (const auto& f : HardwareParams::fields()) {
    const std::string allowed = f.max ? std::to_string(f.min) + ".." + std::to_string(f.max) : "";
    out << "| `" << f.key << "` | " << cell(f.unit) << " | " << cell(allowed) << " |";
    for (const auto& v : values) {
      auto it = v.find(f.key);
      out << " " << cell(it == v.end() ? "" : plain_number(it->second)) << " |";
    }
    out << " " << cell(f.doc) << " | " << cell(f.origin) << " |\n";
  }
  out << "\n";
}

void write_layers_markdown(std::ostream& out) {
  out << "<!-- Generated by `stepsim layers --markdown` (scripts/gen_docs.sh) from the layer registry\n"
         "     (graphs/layers/*.cpp). Do not edit by hand; testbench/docs fails when this file is stale. -->\n"
         "# Layer library\n\n"
         "Parameterized STeP programs for LLM layers, built with the C++ frontend (`sim/frontend/builder.h`). "
         "`stepsim build LAYER --param k=v ... -o FILE.yaml` writes one as a graph file; run it with `stepsim run` and "
         "analyze it with `stepsim analyze`. Routing and KV-length traces are read from `../shared/traces` "
         "(`shared:` paths; `STEPSIM_SHARED` overrides the folder). [validation.md](validation.md) runs them to "
         "reproduce the paper's figures.\n\n";
  for (const layers::LayerInfo* l : layers::LayerRegistry::instance().all()) {
    out << "## " << l->name << "\n\n" << l->description << ".\n\n";
    out << "| parameter | type | default | allowed | description |\n|---|---|---|---|---|\n";
    for (const ParamSpec& p : l->params)
      out << "| `" << p.name << "` | " << param_type_name(p.type) << " | "
          << (p.default_value.empty() ? "`\"\"`" : "`" + p.default_value + "`") << " | " << allowed_values(p) << " | "
          << p.doc << " |\n";
    out << "\n";
  }
}

}  // namespace stepsim
