// Design-space sweeps: one graph (a file, or a layer of the library) run over the cartesian
// product of parameter values, each point a full timing run, gathered into one table. This is
// the "what if we change it" loop of an architect: hardware parameters (--set hbm.channels=8,16),
// graph parameters (--set for a file) and layer parameters (--param tile_n=8,16,0).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/presets/tech.h"

namespace stepsim {

struct SweepSpec {
  std::string graph_file;  // either a graph file ...
  std::string layer;       // ... or a layer of the library (graphs/layers)
  std::string preset = "step-artifact";
  std::string tech = kDefaultTechnology;  // the technology table of the energy and area columns
  // Swept keys with their values, in the order given; the last varies fastest.
  std::vector<std::pair<std::string, std::vector<std::string>>> params;  // layer parameters
  std::vector<std::pair<std::string, std::vector<std::string>>> sets;    // hardware / graph parameters
};

struct SweepRow {
  std::vector<std::string> values;  // one per swept key, params first, then sets
  bool ok = false;                  // ran, and the units it used fit the fabric
  bool ran = false;                 // the run finished: the metrics are measured (also when it does not fit)
  std::string status;               // "ok", "does not fit: 28 memory units > 10", or "error: ..."
  // The run's metrics (sim/report/metrics.h), one per row of metric_table(), in its order; empty
  // when the point did not run.
  std::vector<nlohmann::json> metrics;
  double wall_s = 0;  // wall-clock seconds of the point: building or loading its graph, and the run
};

struct SweepResult {
  std::vector<std::string> keys;     // swept keys, params first, then sets
  std::vector<size_t> value_widths;  // per key: its widest value (the table's columns)
  std::vector<SweepRow> rows;
  bool all_ok() const;
};

// Called once the spec is checked (no rows yet), then after each point with its row last.
using SweepObserver = std::function<void(const SweepResult& so_far)>;

// "8,16,[1,2]" -> {"8", "16", "[1,2]"}: commas inside brackets belong to the value.
std::vector<std::string> split_values(const std::string& text);

// The checked spec's table without rows: its keys and their widths. Throws std::invalid_argument
// as run_sweep does.
SweepResult sweep_table(const SweepSpec& spec);
// The number of points: the product of the value counts.
size_t sweep_size(const SweepSpec& spec);
// Point `index` (0 .. sweep_size - 1, in run_sweep's order) on its own, so that a sweep can be
// spread over workers and its rows merged in order (stepsim.pool.workers).
SweepRow run_sweep_point(const SweepSpec& spec, size_t index);

// Runs every point (a failed point records its error and the sweep goes on). Throws
// std::invalid_argument for a bad spec (no graph, an empty value list, a graph --set with a layer).
SweepResult run_sweep(const SweepSpec& spec, const SweepObserver& observe = {});

// The table as it grows, units in the header: the header once, then each row (flushed) as its
// point finishes. The columns are as wide as the headers and the swept values, so no row waits
// for the last one; a wider number shifts the rest of its row. The columns: the swept keys, the
// metrics of the metric table ("name [unit]"; the printed table those flagged kSweepTable, the CSV
// every one), "wall [s]" and "status".
void print_sweep_header(const SweepResult& r, std::ostream& out);
void print_sweep_row(const SweepResult& r, const SweepRow& row, std::ostream& out);
// The same table as CSV lines (the status quoted when it is not "ok").
void write_sweep_csv_header(const SweepResult& r, std::ostream& out);
void write_sweep_csv_row(const SweepRow& row, std::ostream& out);

}  // namespace stepsim
