// stepsim sweep: one row per combination (the last key varies fastest), printed as its point
// finishes with the point's measured wall time; the same table as CSV through OutputFile; a point
// that fails or does not fit the fabric keeps why in the status column and the sweep exits 1.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <regex>

#include "sim/report/metrics.h"
#include "testbench/cli/cli_fixture.h"

namespace {

using namespace stepsim_cli_test;

TEST_F(Cli, SweepRunsEveryCombinationAndWritesCsv) {
  const std::string g = write("good.yaml", kGood), csv = path("sweep.csv");
  CliRun r = stepsim({"sweep", g, "--set", "compute_bw=1024,4096", "--set", "fifo_depth=1,2", "--csv", csv});
  EXPECT_EQ(r.status, 0) << r.output;
  std::ifstream f(csv);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 5u) << r.output;
  EXPECT_EQ(lines[0].rfind("compute_bw,fifo_depth,cycles [cycles],time_us [us],offchip_read_bytes [B]", 0), 0u)
      << lines[0];
  // Map silu on one [16x64] tile: 8 FLOPs x 1024 elements / bw, plus the two channel hops.
  EXPECT_EQ(lines[1].rfind("1024,1," + std::to_string(8 * 1024 / 1024 + 2) + ",", 0), 0u) << lines[1];
  EXPECT_EQ(lines[3].rfind("4096,1," + std::to_string(8 * 1024 / 4096 + 2) + ",", 0), 0u) << lines[3];
  EXPECT_FALSE(fs::exists(csv + ".tmp"));
}

TEST_F(Cli, SweepReportsFailedPointsAndBadSpecs) {
  const std::string g = write("good.yaml", kGood), csv = path("sweep.csv");
  CliRun r = stepsim({"sweep", g, "--set", "fifo_depth=0,2", "--csv", csv});
  expect_failure(r, {"1 of 2 points failed", "fifo_depth", "'0'"});
  // The point that failed: its key, no metrics (an empty cell for each of the table's), its wall
  // time and the error.
  const std::string text = read_text(csv);
  const std::string empty_cells(stepsim::metric_table().size(), ',');
  EXPECT_TRUE(std::regex_search(text, std::regex("\n0," + empty_cells +
                                                 "[0-9]+\\.[0-9]{3},\"error: hardware parameter 'fifo_depth'[^\n]*'0'\"\n")))
      << text;
  expect_failure(stepsim({"sweep", g, "--param", "tile_n=1"}), {"--param needs --layer"});
  expect_failure(stepsim({"sweep", "--layer", "nope"}), {"unknown layer 'nope'"});
  expect_failure(stepsim({"sweep", "--layer", "moe", "--set", "tile_n=8"}), {"'tile_n' is not a hardware parameter"});
  expect_failure(stepsim({"sweep", "--layer", "moe", "--param", "tile_n=8,,0"}), {"'tile_n' has an empty value"});
}

// The swept key, the metrics flagged kSweepTable (sim/report/metrics.h) as "name [unit]", the
// wall time and the status.
const std::string kHeader =
    "fifo_depth  cycles [cycles]  time_us [us]  offchip_read_bytes [B]  offchip_write_bytes [B]"
    "  offchip_bw_utilization [fraction]  compute_utilization [fraction]  onchip_bytes [B]  compute_units [units]"
    "  memory_units [units]  energy_pj [pJ]  area_mm2 [mm2]  wall [s]  status\n";

TEST_F(Cli, SweepTableHasUnitsAndAMeasuredWallColumn) {
  const std::string g = write("good.yaml", kGood);
  CliRun r = stepsim({"sweep", g, "--set", "fifo_depth=1,2"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind(kHeader, 0), 0u) << r.output;
  // One Map silu on one [16x64] tile: 4 cycles at the preset's compute_bw (50 % of it used).
  const std::regex row(
      "         [12]                4         0\\.004                       0                        0"
      "                             0\\.0000                          0\\.5000                 0                      1"
      "                     0 +[0-9]+ +[0-9]+\\.[0-9]{3}     ([0-9]+\\.[0-9]{3})  ok\n");
  std::istringstream lines(r.output.substr(kHeader.size()));
  int rows = 0;
  for (std::string line; std::getline(lines, line); ++rows) {
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line += "\n", m, row)) << line;
  }
  EXPECT_EQ(rows, 2);
}

// A point's row is printed (and flushed) when the point finishes, not at the end of the sweep;
// its wall column is the time the point took.
TEST_F(Cli, SweepPrintsEachRowAsItsPointFinishes) {
  const std::string g = write("rep.yaml",
                              "params: {n: 1}\n"
                              "streams:\n"
                              "  a: 'T[16x64] S1 D'\n"
                              "nodes:\n"
                              "  - {name: src, op: Source, params: {stream: a}}\n"
                              "  - {name: rep1, op: Repeat, params: {count: 1000}, inputs: {in: src}}\n"
                              "  - {name: rep2, op: Repeat, params: {count: '${n}'}, inputs: {in: rep1}}\n"
                              "  - {name: sum, op: Accum, params: {fn: add, rank: 2}, inputs: {in0: rep2}}\n"
                              "  - {name: sink, op: Sink, inputs: {in: sum}}\n");
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  FILE* p = ::popen((command({"sweep", g, "--set", "n=1,15000"}) + " 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::vector<std::string> lines;
  std::vector<double> arrival;  // seconds after the start
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) {
    lines.push_back(buf);
    arrival.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }
  EXPECT_EQ(WEXITSTATUS(::pclose(p)), 0);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].rfind("    n  cycles [cycles]", 0), 0u) << lines[0];
  auto wall = [](const std::string& line) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(line, m, std::regex(" ([0-9]+\\.[0-9]{3})  ok\n$"))) << line;
    return m.empty() ? 0.0 : std::stod(m[1]);
  };
  const double fast = wall(lines[1]), slow = wall(lines[2]);
  EXPECT_GT(slow, 0.2) << "fifteen million copies take more than that";
  EXPECT_LT(fast, slow / 10);
  // The fast point's row came out while the slow point was still running.
  EXPECT_GT(arrival[2] - arrival[1], 0.5 * slow) << lines[1] << lines[2];
}

// A point whose units after the run exceed the fabric's ran, but is no design: not "ok".
TEST_F(Cli, SweepMarksAPointThatDoesNotFitTheFabric) {
  // One 1024 x 1024 bf16 tile staged in the load's memory units: 2 MiB = 4 units of 512 KiB,
  // where the static allocation (before the run) counts one.
  const std::string g = write("big.yaml",
                              "tensors:\n"
                              "  x: {shape: [1024, 1024], dtype: bf16, init: zeros}\n"
                              "nodes:\n"
                              "  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [1024, 1024]}}\n"
                              "  - {name: sink, op: Sink, inputs: {in: load}}\n");
  const std::string csv = path("fit.csv");
  CliRun r = stepsim({"sweep", g, "--set", "num_pmus=2,10", "--csv", csv});
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\n +2 .* 4 +[0-9]+ +[0-9.]+ +[0-9.]+  does not fit: 4 memory units > 2\n")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\n +10 .* 4 +[0-9]+ +[0-9.]+ +[0-9.]+  ok\n"))) << r.output;
  EXPECT_NE(r.output.find("error: 1 of 2 points failed (status column)\n"), std::string::npos) << r.output;
  const std::string text = read_text(csv);
  EXPECT_TRUE(std::regex_search(
      text, std::regex("\n2,32786,[^\n]*,0,4,2097152,,0,0,4194304,[0-9.,]+,\"does not fit: 4 memory units > 2\"\n")))
      << text;
  EXPECT_TRUE(std::regex_search(text, std::regex("\n10,32786,[^\n]*,0,4,2097152,,0,0,4194304,[0-9.,]+,ok\n"))) << text;
}

TEST_F(Cli, SweepCsvWriteErrorsAreErrors) {
  const std::string g = write("good.yaml", kGood);
  // A folder: refused before any point runs (no table printed).
  CliRun dir = stepsim({"sweep", g, "--set", "fifo_depth=1,2", "--csv", dir_.string()});
  EXPECT_EQ(dir.status, 1);
  EXPECT_EQ(dir.output, "error: cannot write the sweep table '" + dir_.string() + "': it is a folder\n");
  // A file-size limit (512-byte blocks in sh): the CSV of 40 points is larger. The table still
  // reaches stdout (a pipe), the command fails naming the file, and no partial file is left.
  std::string depths = "1";
  for (int d = 2; d <= 40; ++d) depths += "," + std::to_string(d);
  const std::string csv = path("big.csv");
  FILE* p = ::popen(
      ("ulimit -f 1; " + command({"sweep", g, "--set", "fifo_depth=" + depths, "--csv", csv}) + " 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = ::pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_NE(out.find("error: cannot write the sweep table '" + csv + "': File too large\n"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(csv));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find("big.csv"), std::string::npos) << "left behind: " << e.path();
}

}  // namespace
