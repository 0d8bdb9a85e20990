#include "sim/report/metrics.h"

#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace stepsim {

using nlohmann::json;

namespace {

// The value at a dotted path of the report; throws std::invalid_argument naming the path.
const json& report_at(const json& report, const std::string& path) {
  const json* at = &report;
  std::istringstream keys(path);
  for (std::string key; std::getline(keys, key, '.');) {
    if (!at->is_object() || !at->contains(key)) throw std::invalid_argument("the report has no '" + path + "'");
    at = &(*at)[key];
  }
  return *at;
}

uint64_t count_at(const json& report, const std::string& path) {
  const json& v = report_at(report, path);
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
    throw std::invalid_argument("'" + path + "' is not a count: " + v.dump());
  return v.get<uint64_t>();
}

Metric from_path(const char* name, const char* unit, const char* doc, unsigned flags, const char* path,
                 std::vector<std::string> aliases = {}, int digits = 0) {
  Metric m;
  m.name = name;
  m.unit = unit;
  m.doc = doc;
  m.flags = flags;
  m.path = path;
  m.aliases = std::move(aliases);
  m.digits = digits;
  return m;
}

Metric computed(const char* name, const char* unit, const char* doc, unsigned flags, const char* formula,
                json (*compute)(const MetricSource&), std::vector<std::string> aliases = {}, int digits = 0) {
  Metric m = from_path(name, unit, doc, flags, "", std::move(aliases), digits);
  m.formula = formula;
  m.compute = compute;
  return m;
}

json time_us(const MetricSource& s) {
  if (!s.clock_ghz) return nullptr;
  return double(count_at(s.report, "cycles")) / (*s.clock_ghz * 1e3);
}

json offchip_bytes(const MetricSource& s) {
  return count_at(s.report, "offchip.read_bytes") + count_at(s.report, "offchip.write_bytes");
}

json onchip_static_bytes(const MetricSource& s) {
  if (!report_at(s.report, "symbolic.available").get<bool>()) return nullptr;
  return report_at(s.report, "symbolic.onchip_requirement_bytes.value");  // null: unknown symbols
}

// The share of off-chip requests that found their row open: only a model with banks has rows.
json offchip_row_hit_rate(const MetricSource& s) {
  const json& offchip = report_at(s.report, "offchip");
  if (!offchip.contains("dram")) return nullptr;
  return report_at(s.report, "offchip.dram.row_hit_rate");
}

// Energy-delay product: the run's energy (uJ) times its time (us), at the clock the energy section
// priced the leakage with (energy.clock_ghz).
json energy_delay_product(const MetricSource& s) {
  const double uj = report_at(s.report, "energy.total_pj").get<double>() / 1e6;
  const double us = double(count_at(s.report, "cycles")) / (report_at(s.report, "energy.clock_ghz").get<double>() * 1e3);
  return uj * us;
}

std::vector<Metric> make_table() {
  // The old sweep headers "off-chip bw use [%]" and "compute use [%]" are no aliases: they were
  // percentages, the metrics are fractions, and a column read by its old name would be 100 times off.
  return {
      from_path("cycles", "cycles", "simulated cycles of the run", kNeedsFit | kSweepTable, "cycles"),
      computed("time_us", "us", "the cycles at the hardware's clock_ghz", kNeedsFit | kNeedsClock | kSweepTable,
               "`cycles` / (1000 clock_ghz)", time_us, {"time [us]"}, 3),
      from_path("offchip_read_bytes", "B", "bytes of tiles read from HBM", kSweepTable, "offchip.read_bytes",
                {"off-chip read [B]", "read_bytes"}),
      from_path("offchip_write_bytes", "B", "bytes of tiles written to HBM", kSweepTable, "offchip.write_bytes",
                {"off-chip written [B]", "write_bytes"}),
      from_path("offchip_bw_utilization", "fraction", "off-chip bytes over the run's cycles at the peak HBM bandwidth",
                kNeedsFit | kSweepTable, "offchip.bandwidth_utilization", {"bw_util"}, 4),
      from_path("compute_utilization", "fraction", "FLOPs executed over the compute allocated for the run's cycles",
                kNeedsFit | kSweepTable, "compute.utilization", {"compute_util"}, 4),
      from_path("onchip_bytes", "B", "on-chip memory requirement of the run (what the nodes held)", kSweepTable,
                "onchip.requirement_bytes", {"on-chip requirement [B]", "onchip_requirement_bytes"}),
      from_path("compute_units", "units", "compute units (PCUs) allocated on the fabric", kSweepTable,
                "fabric.compute_units", {"compute units"}),
      from_path("memory_units", "units", "memory units (PMUs) allocated on the fabric, after the run", kSweepTable,
                "fabric.memory_units", {"memory units"}),
      computed("offchip_bytes", "B", "bytes read and written off-chip", 0,
               "`offchip.read_bytes` + `offchip.write_bytes`", offchip_bytes),
      computed("offchip_row_hit_rate", "fraction",
               "share of the off-chip requests that found their DRAM row open (hbm.model: dram)", 0,
               "`offchip.dram.row_hit_rate`; none under a model without rows (hbm.model: fixed)",
               offchip_row_hit_rate, {}, 4),
      from_path("flops", "FLOPs", "floating-point operations executed", 0, "compute.flops"),
      from_path("allocated_flops_per_cycle", "FLOPs/cycle", "compute allocated: the compute nodes' FLOPs/cycle summed",
                0, "compute.allocated_flops_per_cycle"),
      computed("onchip_static_bytes", "B", "on-chip memory allocated up front: the symbolic total (stepsim analyze)", 0,
               "`symbolic.onchip_requirement_bytes.value`; none when the symbolic analysis is unavailable or "
               "leaves unknown symbols",
               onchip_static_bytes),
      // Energy and area (sim/report/energy.h, docs/energy.md), priced by the run's technology table.
      from_path("energy_pj", "pJ", "energy of the run: its actions priced by the technology table, plus leakage",
                kNeedsFit | kSweepTable, "energy.total_pj", {}, 0),
      from_path("energy_dynamic_pj", "pJ", "energy of the run's actions (nodes[].actions) at the table's prices", 0,
                "energy.dynamic_pj"),
      from_path("energy_static_pj", "pJ", "leakage of the allocated fabric over the run's time", kNeedsFit,
                "energy.static_pj"),
      from_path("average_power_w", "W", "the run's energy over its time at the preset's clock_ghz", kNeedsFit,
                "energy.average_power_w", {}, 3),
      from_path("energy_per_flop_pj", "pJ/FLOP", "the run's energy per FLOP executed (none without FLOPs)", kNeedsFit,
                "energy.pj_per_flop", {}, 3),
      from_path("energy_per_token_pj", "pJ/token",
                "the run's energy per token the graph processes (none when the graph does not say: `tokens:`)",
                kNeedsFit, "energy.pj_per_token", {}, 1),
      computed("energy_delay_product", "uJ*us", "energy (uJ) times time (us) at the preset's clock", kNeedsFit,
               "`energy.total_pj` / 1e6 x `cycles` / (1000 `energy.clock_ghz`)", energy_delay_product, {}, 3),
      from_path("area_mm2", "mm2",
                "area of the allocated fabric: compute and memory units (with SRAM), routers, address generators, "
                "HBM PHYs",
                kSweepTable, "area.total_mm2", {}, 3),
  };
}

std::string flag_names(unsigned flags) {
  std::string s;
  auto add = [&](unsigned f, const char* name) {
    if (flags & f) s += (s.empty() ? "" : ", ") + std::string(name);
  };
  add(kNeedsFit, "needs fit");
  add(kNeedsClock, "needs clock");
  add(kSweepTable, "sweep table");
  return s;
}

std::string code_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "`" : ", `") + n + "`";
  return s;
}

}  // namespace

const std::vector<Metric>& metric_table() {
  static const std::vector<Metric> table = make_table();
  return table;
}

const Metric& find_metric(const std::string& name) {
  for (const Metric& m : metric_table())
    if (m.name == name) return m;
  for (const Metric& m : metric_table())
    for (const std::string& a : m.aliases)
      if (a == name) return m;
  std::string known;
  for (const Metric& m : metric_table()) known += (known.empty() ? "" : ", ") + m.name;
  throw std::invalid_argument("unknown metric '" + name + "'; known: " + known + " (stepsim metrics)");
}

std::string metric_header(const Metric& m) { return m.name + " [" + m.unit + "]"; }

json metric_value(const Metric& m, const MetricSource& source) {
  try {
    json v = m.compute ? m.compute(source) : report_at(source.report, m.path);
    if (!v.is_null() && !v.is_number()) throw std::invalid_argument("'" + v.dump() + "' is not a number");
    return v;
  } catch (const std::exception& e) {  // a missing key, or a value of another type
    throw std::invalid_argument("metric '" + m.name + "': " + e.what() + " (is it the JSON report of a run?)");
  }
}

json metric_value(const std::string& name, const json& report, std::optional<double> clock_ghz) {
  return metric_value(find_metric(name), MetricSource{report, clock_ghz});
}

std::vector<json> metric_values(const json& report, std::optional<double> clock_ghz) {
  std::vector<json> values;
  for (const Metric& m : metric_table()) values.push_back(metric_value(m, MetricSource{report, clock_ghz}));
  return values;
}

std::string metric_cell(const Metric& m, const json& value) {
  if (value.is_null()) return "";
  if (!value.is_number_float()) return value.dump();
  std::ostringstream s;
  s << std::fixed << std::setprecision(m.digits) << value.get<double>();
  return s.str();
}

void write_metrics_markdown(std::ostream& out) {
  out << "# Metrics\n\n"
         "<!-- Generated by `stepsim metrics` from the metric table (sim/report/metrics.cpp); do not edit:\n"
         "     run scripts/gen_docs.sh. -->\n\n"
         "Every figure of a run that `stepsim sweep`, `stepsim.sweep`, the DSE's objectives and\n"
         "constraints ([dse.md](dse.md)) and the plots compare, under one name. Each is computed once,\n"
         "from the run's JSON report ([user-guide.md](user-guide.md#the-json-report));\n"
         "`_stepsim.metric_values(report)` gives them all in Python. The sweep's columns are\n"
         "`name [unit]`.\n\n"
         "| metric | unit | what | from the report | flags |\n"
         "|---|---|---|---|---|\n";
  for (const Metric& m : metric_table())
    out << "| `" << m.name << "` | " << m.unit << " | " << m.doc << " | "
        << (m.compute ? m.formula : "`" + m.path + "`") << " | " << flag_names(m.flags) << " |\n";
  out << "\nFlags:\n\n"
         "- **needs fit**: a timing figure; it assumes the fabric holds every unit the run used, so in a\n"
         "  run that does not fit (`fabric.fits` false) it measures no design.\n"
         "- **needs clock**: computed with the hardware's `clock_ghz`, which the report does not carry.\n"
         "- **sweep table**: a column of `stepsim sweep`'s printed table; its CSV (`--csv`) has every metric.\n\n"
         "Former names, still accepted by name for one release:\n\n";
  for (const Metric& m : metric_table())
    if (!m.aliases.empty()) out << "- `" << m.name << "`: " << code_list(m.aliases) << "\n";
  out << "\nAdd a metric: [architecture.md](architecture.md#recipes), \"Add a metric\".\n";
}

}  // namespace stepsim
