#include "sim/sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <stdexcept>

#include "graphs/layers/layer.h"
#include "hw/presets/hardware.h"
#include "sim/loader.h"
#include "sim/report.h"
#include "sim/simulation.h"

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

SweepRow run_point(const SweepSpec& spec, const std::vector<std::pair<std::string, std::string>>& params,
                   const std::vector<std::pair<std::string, std::string>>& sets) {
  SweepRow row;
  for (const auto& kv : params) row.values.push_back(kv.second);
  for (const auto& kv : sets) row.values.push_back(kv.second);
  try {
    SimOptions opt;
    opt.hw = load_preset(spec.preset);
    std::vector<std::pair<std::string, std::string>> graph_sets;
    for (const auto& [k, v] : sets) {
      if (HardwareParams::has_field(k)) opt.hw.set(k, v);
      else graph_sets.push_back({k, v});
    }
    Graph g = spec.layer.empty() ? load_graph(spec.graph_file, graph_sets)
                                 : layers::build_layer(spec.layer, std::map<std::string, std::string>(params.begin(), params.end()));
    const auto t0 = std::chrono::steady_clock::now();
    SimResult r = simulate(g, opt);
    row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok) {
      row.error = r.error;
      return row;
    }
    const nlohmann::json j = make_report(g, opt, r).json;
    row.ok = true;
    row.cycles = j["cycles"].get<uint64_t>();
    row.time_us = double(row.cycles) / (opt.hw.clock_ghz * 1e3);
    row.read_bytes = j["offchip"]["read_bytes"].get<uint64_t>();
    row.write_bytes = j["offchip"]["write_bytes"].get<uint64_t>();
    row.bw_util = j["offchip"]["bandwidth_utilization"].get<double>();
    row.compute_util = j["compute"]["utilization"].get<double>();
    row.onchip_bytes = j["onchip"]["requirement_bytes"].get<uint64_t>();
    row.compute_units = j["fabric"]["compute_units"].get<uint64_t>();
    row.memory_units = j["fabric"]["memory_units"].get<uint64_t>();
  } catch (const std::exception& e) {
    row.error = e.what();
  }
  return row;
}

// The result columns: header with unit, and the cell of a row.
struct Column {
  const char* header;
  std::string (*cell)(const SweepRow&);
};

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

const std::vector<Column>& columns() {
  static const std::vector<Column> c = {
      {"cycles", [](const SweepRow& r) { return std::to_string(r.cycles); }},
      {"time [us]", [](const SweepRow& r) { return fixed(r.time_us, 3); }},
      {"off-chip read [B]", [](const SweepRow& r) { return std::to_string(r.read_bytes); }},
      {"off-chip written [B]", [](const SweepRow& r) { return std::to_string(r.write_bytes); }},
      {"off-chip bw use [%]", [](const SweepRow& r) { return fixed(100 * r.bw_util, 1); }},
      {"compute use [%]", [](const SweepRow& r) { return fixed(100 * r.compute_util, 2); }},
      {"on-chip requirement [B]", [](const SweepRow& r) { return std::to_string(r.onchip_bytes); }},
      {"compute units", [](const SweepRow& r) { return std::to_string(r.compute_units); }},
      {"memory units", [](const SweepRow& r) { return std::to_string(r.memory_units); }},
      {"wall [s]", [](const SweepRow& r) { return fixed(r.wall_s, 3); }},
  };
  return c;
}

std::vector<std::vector<std::string>> table(const SweepResult& r, bool quote_errors) {
  std::vector<std::vector<std::string>> t;
  std::vector<std::string> head = r.keys;
  for (const Column& c : columns()) head.push_back(c.header);
  head.push_back("status");
  t.push_back(head);
  for (const SweepRow& row : r.rows) {
    std::vector<std::string> line = row.values;
    for (const Column& c : columns()) line.push_back(row.ok ? c.cell(row) : "");
    std::string status = row.ok ? "ok" : "error: " + row.error;
    if (quote_errors) {
      std::string q = "\"";
      for (char ch : status) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      status = q + "\"";
    }
    line.push_back(status);
    t.push_back(line);
  }
  return t;
}

}  // namespace

SweepResult run_sweep(const SweepSpec& spec) {
  if (spec.graph_file.empty() == spec.layer.empty()) throw std::invalid_argument("sweep: give a graph file or --layer, not both");
  if (!spec.layer.empty()) layers::LayerRegistry::instance().find(spec.layer);  // unknown layer -> clear error
  for (const auto& [k, v] : spec.sets)
    if (!spec.layer.empty() && !HardwareParams::has_field(k))
      throw std::invalid_argument("sweep: '" + k + "' is not a hardware parameter; layer parameters go in --param");
  if (spec.layer.empty() && !spec.params.empty()) throw std::invalid_argument("sweep: --param needs --layer (use --set for a graph file)");
  SweepResult res;
  std::vector<std::pair<std::string, std::vector<std::string>>> axes = spec.params;
  axes.insert(axes.end(), spec.sets.begin(), spec.sets.end());
  for (const auto& [k, v] : axes) {
    if (v.empty() || std::any_of(v.begin(), v.end(), [](const std::string& s) { return s.empty(); }))
      throw std::invalid_argument("sweep: '" + k + "' has an empty value");
    res.keys.push_back(k);
  }
  std::vector<size_t> idx(axes.size(), 0);
  for (;;) {
    std::vector<std::pair<std::string, std::string>> params, sets;
    for (size_t a = 0; a < axes.size(); ++a)
      (a < spec.params.size() ? params : sets).push_back({axes[a].first, axes[a].second[idx[a]]});
    res.rows.push_back(run_point(spec, params, sets));
    size_t a = axes.size();
    while (a > 0 && ++idx[a - 1] == axes[a - 1].second.size()) idx[--a] = 0;
    if (a == 0) break;
  }
  return res;
}

void print_sweep(const SweepResult& r, std::ostream& out) {
  const auto t = table(r, false);
  std::vector<size_t> w(t[0].size(), 0);
  for (const auto& line : t)
    for (size_t i = 0; i + 1 < line.size(); ++i) w[i] = std::max(w[i], line[i].size());
  for (const auto& line : t) {
    for (size_t i = 0; i < line.size(); ++i) {
      out << (i ? "  " : "");
      if (i + 1 < line.size()) out << std::setw(int(w[i])) << line[i];
      else out << line[i];
    }
    out << "\n";
  }
}

void write_sweep_csv(const SweepResult& r, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw std::invalid_argument("cannot write " + path);
    for (const auto& line : table(r, true)) {
      for (size_t i = 0; i < line.size(); ++i) {
        const bool quote = i + 1 < line.size() && line[i].find(',') != std::string::npos;
        f << (i ? "," : "") << (quote ? "\"" + line[i] + "\"" : line[i]);
      }
      f << "\n";
    }
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace stepsim
