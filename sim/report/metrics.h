// The one metric table: every figure of a run that a table, a search or a plot compares, each with
// one name, one unit, a one-line doc and the one formula that computes it. `stepsim sweep` (its
// table and CSV columns), the report's summary, the Python package (_stepsim.metric_table,
// _stepsim.metric_values: stepsim.sweep, the DSE's objectives and constraints, the plots) and the
// generated page docs/metrics.md (`stepsim metrics`) all read it, so a figure has the same name
// everywhere.
//
// A new metric is one row and one test:
//   1. one row in metric_table() (metrics.cpp): name, unit, doc, flags, and a JSON path of the
//      report or a short function over it;
//   2. its exact value in testbench/metrics/metrics_test.cpp (kExpected; the test fails until the
//      row has one);
//   then scripts/gen_docs.sh regenerates docs/metrics.md (testbench/docs fails until it does).
//
// Why the JSON report is the source: it is what every reader already holds. The command line
// writes it, Python receives it (Result.report), the DSE's workers send it back and a saved report
// can be read again; SimResult exists only inside a C++ run. The report does not carry the clock
// (clock_ghz only converts cycles to time), so a metric that needs it (kNeedsClock) takes it apart.
// Every metric is global: one value per run (per-node figures stay in the report's nodes[]).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stepsim {

// What a metric is computed from.
struct MetricSource {
  const nlohmann::json& report;     // make_report's JSON (or Python's dict of it)
  std::optional<double> clock_ghz;  // the hardware's clock_ghz; without it a kNeedsClock metric has no value
};

enum MetricFlag : unsigned {
  // A timing figure: it assumes the fabric holds every unit the run used, so the value of a run
  // that does not fit (report fabric.fits false) measures no design.
  kNeedsFit = 1u << 0,
  // Computed with the hardware's clock_ghz, which the report does not carry.
  kNeedsClock = 1u << 1,
  // A column of `stepsim sweep`'s printed table (its CSV has every metric).
  kSweepTable = 1u << 2,
};

struct Metric {
  std::string name;  // one identifier, the same in the CSV, Python and the DSE's space files
  std::string unit;  // "B", "cycles", "fraction", ...
  std::string doc;   // one line
  unsigned flags = 0;
  int digits = 0;  // digits after the point in a table cell (a value that is not an integer)
  // Either the JSON path of the value in the report ("offchip.read_bytes") ...
  std::string path;
  // ... or a function computing it (null when the report cannot give it), with the formula in
  // words for docs/metrics.md.
  nlohmann::json (*compute)(const MetricSource&) = nullptr;
  std::string formula;
  // Former names of the figure (the sweep's CSV headers and Python columns before this table);
  // find_metric accepts them for one release.
  std::vector<std::string> aliases;
};

// Every metric, in the order of the sweep's columns.
const std::vector<Metric>& metric_table();

// The metric of that name (or former name); throws std::invalid_argument naming the unknown
// metric and the known ones.
const Metric& find_metric(const std::string& name);

// "name [unit]": the column header of the sweep's table and CSV.
std::string metric_header(const Metric& m);

// One metric's value from a report: a number, or null when the report cannot give it (a
// kNeedsClock metric without a clock, onchip_static_bytes without a symbolic value). Throws
// std::invalid_argument naming the metric and the missing key when the JSON is not a run report.
nlohmann::json metric_value(const Metric& m, const MetricSource& source);
nlohmann::json metric_value(const std::string& name, const nlohmann::json& report,
                            std::optional<double> clock_ghz = std::nullopt);

// Every row's value, in metric_table()'s order.
std::vector<nlohmann::json> metric_values(const nlohmann::json& report, std::optional<double> clock_ghz = std::nullopt);

// A value as a table cell: an integer as is, a fraction with the metric's digits, null as "".
std::string metric_cell(const Metric& m, const nlohmann::json& value);

// docs/metrics.md (`stepsim metrics`; scripts/gen_docs.sh writes it, testbench/docs checks it).
void write_metrics_markdown(std::ostream& out);

}  // namespace stepsim
