#include "scripts/cli/sweep.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "graphs/layers/layer.h"
#include "hw/presets/hardware.h"
#include "sim/engine/diagnose.h"
#include "sim/engine/run_request.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/report/metrics.h"
#include "sim/report/report.h"

namespace stepsim {

bool SweepResult::all_ok() const {
  return std::all_of(rows.begin(), rows.end(), [](const SweepRow& r) { return r.ok; });
}

std::vector<std::string> split_values(const std::string& text) {
  std::vector<std::string> v;
  std::string cur;
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      v.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  v.push_back(cur);
  return v;
}

namespace {

// Runs one point and fills its figures (throws for a graph that does not load or run).
void measure_point(const SweepSpec& spec, const std::vector<std::pair<std::string, std::string>>& params,
                   const std::vector<std::pair<std::string, std::string>>& sets, SweepRow& row) {
  RunRequest request;
  request.preset = spec.preset;
  request.tech = spec.tech;
  request.sets = sets;
  auto [opt, graph_sets] = prepare_run(request);
  Graph g = spec.layer.empty()
                ? load_graph(spec.graph_file, graph_sets)
                : layers::build_layer(spec.layer, std::map<std::string, std::string>(params.begin(), params.end()));
  SimResult r = simulate(g, opt);
  if (!r.ok) {
    row.status = "error: " + r.error;
    return;
  }
  row.metrics = metric_values(make_report(g, opt, r).json, opt.hw.clock_ghz);
  row.ran = true;
  // The static allocation rejects a graph before its run; buffers that grow during the run can
  // still take more memory units than the fabric has, and such a point is no design.
  const std::string excess = fabric_excess(r, opt.hw);
  row.ok = excess.empty();
  row.status = row.ok ? "ok" : "does not fit: " + excess;
}

SweepRow run_point(const SweepSpec& spec, const std::vector<std::pair<std::string, std::string>>& params,
                   const std::vector<std::pair<std::string, std::string>>& sets) {
  SweepRow row;
  for (const auto& kv : params) row.values.push_back(kv.second);
  for (const auto& kv : sets) row.values.push_back(kv.second);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    measure_point(spec, params, sets, row);
  } catch (const std::exception& e) {
    row.status = std::string("error: ") + e.what();
  }
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return row;
}

// The metric columns of the printed table (kSweepTable) or of the CSV (all), as indices into
// metric_table().
std::vector<size_t> metric_columns(bool printed) {
  std::vector<size_t> cols;
  for (size_t k = 0; k < metric_table().size(); ++k)
    if (!printed || (metric_table()[k].flags & kSweepTable)) cols.push_back(k);
  return cols;
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

const char* const kWallHeader = "wall [s]";

std::vector<std::string> header_cells(const SweepResult& r, bool printed) {
  std::vector<std::string> head = r.keys;
  for (size_t k : metric_columns(printed)) head.push_back(metric_header(metric_table()[k]));
  head.push_back(kWallHeader);
  return head;  // then "status"
}

// Every cell of a row but the status; the metrics are empty when the point did not run.
std::vector<std::string> row_cells(const SweepRow& row, bool printed) {
  std::vector<std::string> line = row.values;
  for (size_t k : metric_columns(printed))
    line.push_back(row.ran ? metric_cell(metric_table()[k], row.metrics.at(k)) : "");
  line.push_back(fixed(row.wall_s, 3));
  return line;
}

// The printed table's columns: as wide as their headers and the swept values.
std::vector<size_t> column_widths(const SweepResult& r) {
  const std::vector<std::string> head = header_cells(r, true);
  std::vector<size_t> w;
  for (size_t i = 0; i < head.size(); ++i)
    w.push_back(std::max(head[i].size(), i < r.keys.size() ? r.value_widths[i] : 0));
  return w;
}

// Right-aligned cells, then the status (a multi-line error on one line).
void print_line(const std::vector<size_t>& widths, const std::vector<std::string>& cells, std::string status,
                std::ostream& out) {
  for (size_t i = 0; i < cells.size(); ++i) out << (i ? "  " : "") << std::setw(int(widths[i])) << cells[i];
  std::replace(status.begin(), status.end(), '\n', ' ');
  out << "  " << status << std::endl;
}

std::string csv_cell(const std::string& s, bool quote) {
  if (!quote && s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// The status is quoted unless it is "ok" (an error is text, often with commas).
void write_csv_line(const std::vector<std::string>& cells, const std::string& status, bool quote_status,
                    std::ostream& out) {
  for (const std::string& c : cells) out << csv_cell(c, false) << ",";
  out << csv_cell(status, quote_status) << "\n";
}

// Every swept key with its values, layer parameters first, in the order of the spec.
std::vector<std::pair<std::string, std::vector<std::string>>> sweep_axes(const SweepSpec& spec) {
  auto axes = spec.params;
  axes.insert(axes.end(), spec.sets.begin(), spec.sets.end());
  return axes;
}

}  // namespace

SweepResult sweep_table(const SweepSpec& spec) {
  if (spec.graph_file.empty() == spec.layer.empty())
    throw std::invalid_argument("sweep: give a graph file or --layer, not both");
  if (!spec.layer.empty()) layers::LayerRegistry::instance().find(spec.layer);  // unknown layer -> clear error
  for (const auto& [k, v] : spec.sets)
    if (!spec.layer.empty() && !HardwareParams::has_field(k))
      throw std::invalid_argument("sweep: '" + k + "' is not a hardware parameter; layer parameters go in --param");
  if (spec.layer.empty() && !spec.params.empty())
    throw std::invalid_argument("sweep: --param needs --layer (use --set for a graph file)");
  SweepResult res;
  for (const auto& [k, v] : sweep_axes(spec)) {
    if (v.empty() || std::any_of(v.begin(), v.end(), [](const std::string& s) { return s.empty(); }))
      throw std::invalid_argument("sweep: '" + k + "' has an empty value");
    res.keys.push_back(k);
    size_t widest = 0;
    for (const std::string& x : v) widest = std::max(widest, x.size());
    res.value_widths.push_back(widest);
  }
  return res;
}

size_t sweep_size(const SweepSpec& spec) {
  size_t n = 1;
  for (const auto& axis : sweep_axes(spec)) n *= axis.second.size();
  return n;
}

SweepRow run_sweep_point(const SweepSpec& spec, size_t index) {
  const auto axes = sweep_axes(spec);
  if (index >= sweep_size(spec)) throw std::invalid_argument("sweep: point " + std::to_string(index) + " out of range");
  // The index in mixed radix, the last key fastest: the order run_sweep visits the points in.
  std::vector<size_t> digit(axes.size());
  for (size_t a = axes.size(); a-- > 0;) {
    digit[a] = index % axes[a].second.size();
    index /= axes[a].second.size();
  }
  std::vector<std::pair<std::string, std::string>> params, sets;
  for (size_t a = 0; a < axes.size(); ++a)
    (a < spec.params.size() ? params : sets).push_back({axes[a].first, axes[a].second[digit[a]]});
  return run_point(spec, params, sets);
}

SweepResult run_sweep(const SweepSpec& spec, const SweepObserver& observe) {
  SweepResult res = sweep_table(spec);
  if (observe) observe(res);
  const size_t n = sweep_size(spec);
  for (size_t i = 0; i < n; ++i) {
    res.rows.push_back(run_sweep_point(spec, i));
    if (observe) observe(res);
  }
  return res;
}

void print_sweep_header(const SweepResult& r, std::ostream& out) {
  print_line(column_widths(r), header_cells(r, true), "status", out);
}

void print_sweep_row(const SweepResult& r, const SweepRow& row, std::ostream& out) {
  print_line(column_widths(r), row_cells(row, true), row.status, out);
}

void write_sweep_csv_header(const SweepResult& r, std::ostream& out) {
  write_csv_line(header_cells(r, false), "status", false, out);
}

void write_sweep_csv_row(const SweepRow& row, std::ostream& out) {
  write_csv_line(row_cells(row, false), row.status, row.status != "ok", out);
}

}  // namespace stepsim
