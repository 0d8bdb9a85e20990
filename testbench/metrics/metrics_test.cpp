// The metric table (sim/report/metrics.h): every row's exact value from a real run, one name per
// figure, clear errors for an unknown name or a JSON that is not a run report, and `stepsim
// sweep`'s columns are the table's.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "hw/presets/hardware.h"
#include "scripts/cli/sweep.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/report/metrics.h"
#include "sim/report/report.h"

namespace stepsim {
namespace {

using nlohmann::json;

const std::string kGraph = std::string(STEPSIM_SOURCE_DIR) + "/graphs/examples/higher_order.yaml";
// Known-answer prices (not a real technology): the energy metrics below are sums of the run's action
// counts times these.
const std::string kHandTech = std::string(STEPSIM_SOURCE_DIR) + "/testbench/energy/hand_tech.yaml";

// The run's actions (report energy.actions) priced by hand_tech.yaml, in pJ: mac 262144 x 1, exp
// 2048 x 2, vector_op 9216 x 3, sram_read 135168 x 5, sram_write 133120 x 7, fifo_push, fifo_pop
// and noc_transfer 161792 x (11 + 13 + 17), hbm_read 133120 x 19, hbm_write 4096 x 23.
constexpr double kDynamicPj = 262144.0 + 4096.0 + 27648.0 + 675840.0 + 931840.0 + 1779712.0 + 2103296.0 +
                              2750464.0 + 2529280.0 + 94208.0;  // 11158528
// Leakage of 4 compute units, 9 memory units, 13 routers, 5 address generators, 32 HBM channels:
// 4 x 1 + 9 x 2 + 13 x 3 + 5 x 4 + 32 x 5 = 241 mW, over 1535 ns at 1 GHz.
constexpr double kLeakageMw = 241.0;
constexpr double kTotalPj = kDynamicPj + kLeakageMw * 1535.0;

// Every metric of higher_order.yaml on step-artifact (clock 1 GHz, 1024 B/cycle off-chip), as
// `stepsim run` prints them. A new row of the table fails EveryRowHasItsExactValue until it has its
// value here: a new metric is one row and one test.
const std::map<std::string, json> kExpected = {
    {"cycles", 1535u},
    {"time_us", 1.535},  // 1535 cycles at 1 GHz
    {"offchip_read_bytes", 133120u},
    {"offchip_write_bytes", 4096u},
    {"offchip_bw_utilization", (133120.0 + 4096.0) / (1535.0 * 1024.0)},
    {"compute_utilization", 541696.0 / (3328.0 * 1535.0)},
    {"onchip_bytes", 56576u},
    {"compute_units", 4u},
    {"memory_units", 9u},
    {"offchip_bytes", 133120u + 4096u},
    {"offchip_row_hit_rate", nullptr},  // the fixed-latency model has no rows
    {"flops", 541696u},
    {"allocated_flops_per_cycle", 3328u},
    {"onchip_static_bytes", 56576},  // the symbolic total equals the measured requirement here
    {"energy_pj", kTotalPj},
    {"energy_dynamic_pj", kDynamicPj},
    {"energy_static_pj", kLeakageMw * 1535.0},
    {"average_power_w", kTotalPj * 1.0 / 1535.0 / 1000.0},  // pJ per ns is mW
    {"energy_per_flop_pj", kTotalPj / 541696.0},
    {"energy_per_token_pj", nullptr},  // the graph gives no tokens
    {"energy_delay_product", kTotalPj / 1e6 * (1535.0 / 1e3)},
    // 4 x 100 + 9 x (10 + 512 KiB x 0.5) + 13 x 1 + 5 x 2 + 32 x 3 mm2.
    {"area_mm2", 2913.0},
};

class Metrics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const Graph g = load_graph(kGraph, {});
    SimOptions opt;
    opt.hw = load_preset("step-artifact");
    opt.tech = load_technology(kHandTech);
    result_ = new SimResult(simulate(g, opt));
    ASSERT_TRUE(result_->ok) << result_->error;
    report_ = new json(make_report(g, opt, *result_).json);
  }
  static void TearDownTestSuite() {
    delete report_;
    delete result_;
  }
  static json* report_;
  static SimResult* result_;
};
json* Metrics::report_ = nullptr;
SimResult* Metrics::result_ = nullptr;

// The table reads the report; the engine's own result, summed here without the report, gives the
// same figures (so kExpected's measured values are the run's, whichever path reads them).
TEST_F(Metrics, TheFiguresAreTheEnginesOwn) {
  const SimResult& r = *result_;
  uint64_t flops = 0, allocated = 0;
  for (const NodeResult& n : r.nodes) {
    flops += n.flops;
    allocated += n.compute_bw;
  }
  auto value = [](const char* name) { return metric_value(name, *report_, 1.0); };
  EXPECT_EQ(value("cycles"), json(r.cycles));
  EXPECT_EQ(value("time_us"), json(double(r.cycles) / 1e3));
  EXPECT_EQ(value("offchip_read_bytes"), json(r.offchip_read_bytes));
  EXPECT_EQ(value("offchip_write_bytes"), json(r.offchip_write_bytes));
  EXPECT_EQ(value("offchip_bytes"), json(r.offchip_read_bytes + r.offchip_write_bytes));
  EXPECT_EQ(value("onchip_bytes"), json(r.onchip_requirement_bytes));
  EXPECT_EQ(value("compute_units"), json(r.compute_units));
  EXPECT_EQ(value("memory_units"), json(r.memory_units));
  EXPECT_EQ(value("flops"), json(flops));
  EXPECT_EQ(value("allocated_flops_per_cycle"), json(allocated));
}

TEST_F(Metrics, EveryRowHasItsExactValue) {
  const std::vector<json> values = metric_values(*report_, 1.0);
  ASSERT_EQ(values.size(), metric_table().size());
  std::set<std::string> seen;
  for (size_t k = 0; k < values.size(); ++k) {
    const std::string& name = metric_table()[k].name;
    seen.insert(name);
    ASSERT_TRUE(kExpected.count(name)) << "metric '" << name << "' has no expected value in kExpected";
    EXPECT_EQ(values[k], kExpected.at(name)) << name;
    EXPECT_EQ(values[k].is_number_float(), kExpected.at(name).is_number_float()) << name << ": " << values[k];
  }
  for (const auto& [name, v] : kExpected)
    EXPECT_TRUE(seen.count(name)) << "kExpected has '" << name << "', the table not";
}

TEST_F(Metrics, OneValueByNameOrFormerName) {
  EXPECT_EQ(metric_value("onchip_bytes", *report_), json(56576u));
  EXPECT_EQ(metric_value("on-chip requirement [B]", *report_), json(56576u));   // the old sweep CSV header
  EXPECT_EQ(metric_value("onchip_requirement_bytes", *report_), json(56576u));  // the old stepsim.sweep column
  EXPECT_EQ(find_metric("time [us]").name, "time_us");
}

TEST_F(Metrics, WithoutAClockOrASymbolicValueThereIsNoValue) {
  EXPECT_TRUE(metric_value("time_us", *report_).is_null());
  EXPECT_EQ(metric_value("time_us", *report_, 2.0), json(0.7675));  // 1535 cycles at 2 GHz
  json unavailable = *report_;
  unavailable["symbolic"] = {{"available", false}, {"reason", "no shapes"}};
  EXPECT_TRUE(metric_value("onchip_static_bytes", unavailable).is_null());
  json unknown = *report_;
  unknown["symbolic"]["onchip_requirement_bytes"]["value"] = nullptr;  // unknown symbols
  EXPECT_TRUE(metric_value("onchip_static_bytes", unknown).is_null());
}

TEST_F(Metrics, CellsAreIntegersFractionsWithTheirDigitsOrEmpty) {
  EXPECT_EQ(metric_cell(find_metric("cycles"), metric_value("cycles", *report_)), "1535");
  EXPECT_EQ(metric_cell(find_metric("time_us"), metric_value("time_us", *report_, 1.0)), "1.535");
  EXPECT_EQ(metric_cell(find_metric("offchip_bw_utilization"), metric_value("offchip_bw_utilization", *report_)),
            "0.0873");
  EXPECT_EQ(metric_cell(find_metric("time_us"), json()), "");
}

TEST(MetricTable, AnUnknownNameNamesItAndTheKnownOnes) {
  try {
    find_metric("latency");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("unknown metric 'latency'; known: cycles, time_us, ", 0), 0u) << what;
    for (const Metric& m : metric_table()) EXPECT_NE(what.find(m.name), std::string::npos) << what;
  }
  EXPECT_THROW(metric_value("latency", json::object()), std::invalid_argument);
}

TEST(MetricTable, AJsonThatIsNotARunReportIsAClearError) {
  auto error = [](const json& report) {
    try {
      metric_values(report, 1.0);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(json::object()), "metric 'cycles': the report has no 'cycles' (is it the JSON report of a run?)");
  EXPECT_EQ(error({{"cycles", "many"}}),
            "metric 'cycles': '\"many\"' is not a number (is it the JSON report of a run?)");
  EXPECT_EQ(error({{"cycles", 5}, {"offchip", 1}}),
            "metric 'offchip_read_bytes': the report has no 'offchip.read_bytes' (is it the JSON report of a run?)");
}

TEST(MetricTable, OneNamePerFigureEachWithUnitDocAndOneFormula) {
  std::set<std::string> names;
  for (const Metric& m : metric_table()) {
    EXPECT_TRUE(std::regex_match(m.name, std::regex("[a-z][a-z0-9_]*"))) << "'" << m.name << "' is no identifier";
    EXPECT_TRUE(names.insert(m.name).second) << "two rows named " << m.name;
    EXPECT_FALSE(m.unit.empty()) << m.name << " has no unit";
    EXPECT_FALSE(m.doc.empty()) << m.name << " has no doc";
    EXPECT_NE(m.path.empty(), m.compute == nullptr) << m.name << ": give a path or a function, not both";
    EXPECT_EQ(m.compute != nullptr, !m.formula.empty()) << m.name << ": a function needs its formula in words";
  }
  for (const Metric& m : metric_table())
    for (const std::string& a : m.aliases) EXPECT_TRUE(names.insert(a).second) << "former name '" << a << "' twice";
}

// `stepsim sweep`'s CSV: the swept keys, every metric as "name [unit]" in the table's order, the
// wall time and the status; each cell is the metric's cell of the point's report. The printed
// table: the kSweepTable metrics.
TEST(MetricTable, TheSweepsColumnsAreTheTable) {
  SweepSpec spec;
  spec.graph_file = kGraph;
  spec.sets = {{"clock_ghz", {"2"}}};
  spec.tech = kHandTech;
  const SweepResult r = run_sweep(spec);
  ASSERT_EQ(r.rows.size(), 1u);
  ASSERT_TRUE(r.rows[0].ok) << r.rows[0].status;
  std::string header = "clock_ghz", printed = "clock_ghz", cells = "2";
  for (const Metric& m : metric_table()) {
    header += "," + metric_header(m);
    if (m.flags & kSweepTable) printed += "  " + metric_header(m);
  }
  std::ostringstream csv, text;
  write_sweep_csv_header(r, csv);
  EXPECT_EQ(csv.str(), header + ",wall [s],status\n");
  print_sweep_header(r, text);
  EXPECT_EQ(text.str(), printed + "  wall [s]  status\n");

  std::map<std::string, json> want = kExpected;
  want["time_us"] = 0.7675;  // at 2 GHz: the leakage lasts half as long
  const double total = kDynamicPj + kLeakageMw * 1535.0 / 2.0;
  want["energy_pj"] = total;
  want["energy_static_pj"] = kLeakageMw * 1535.0 / 2.0;
  want["average_power_w"] = total * 2.0 / 1535.0 / 1000.0;
  want["energy_per_flop_pj"] = total / 541696.0;
  want["energy_delay_product"] = total / 1e6 * (1535.0 / 2e3);
  for (size_t k = 0; k < metric_table().size(); ++k) {
    const Metric& m = metric_table()[k];
    EXPECT_EQ(r.rows[0].metrics.at(k), want.at(m.name)) << m.name;
    cells += "," + metric_cell(m, want.at(m.name));
  }
  std::ostringstream row;
  write_sweep_csv_row(r.rows[0], row);
  EXPECT_TRUE(std::regex_match(row.str(), std::regex(cells + ",[0-9]+\\.[0-9]{3},ok\n"))) << row.str();
}

}  // namespace
}  // namespace stepsim
