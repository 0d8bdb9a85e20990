// `stepsim size-fifos` on the command line: the report, the written graph, and bad input that
// fails cleanly (exit 1, one message) leaving no output file behind (docs/checking.md).
#include <gtest/gtest.h>

#include "testbench/cli/cli_fixture.h"
#include "testbench/sizing/fork_join.h"

namespace stepsim_cli_test {
namespace {

using SizeFifos = Cli;

// The 8-element fork-join (testbench/sizing/fork_join.h).
const std::string kForkJoin = stepsim::sizing_test::fork_join_graph(8);

TEST_F(SizeFifos, ReportsTheDeadlockDepthAndWritesARunnableGraph) {
  const std::string in = write("fj.yaml", kForkJoin), out = path("sized.yaml");
  const CliRun r = stepsim({"size-fifos", in, "-o", out});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("bc.out0->zip.in0: deadlocks at depth 7, runs at 8"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wrote " + out + " (6 nodes)"), std::string::npos) << r.output;
  EXPECT_NE(read_text(out).find("input_depth: {in0: 8, in1: 2}"), std::string::npos) << read_text(out);
  const CliRun run = stepsim({"run", out});
  EXPECT_EQ(run.status, 0) << run.output;
}

TEST_F(SizeFifos, BadOptionsAreRejectedAndLeaveNoOutput) {
  const std::string in = write("fj.yaml", kForkJoin), out = path("sized.yaml");
  for (const char* bad : {"-0.1", "abc", "2", "0.01x", "nan", "inf", " 0.1"}) {
    write("sized.yaml", "stale");  // an earlier run's output must not survive a failed one
    expect_failure(stepsim({"size-fifos", in, "--tolerance", bad, "-o", out}),
                   {"--tolerance expects a number in 0..1"});
    EXPECT_FALSE(fs::exists(out)) << bad;
  }
  expect_failure(stepsim({"size-fifos", in, "--probe-runs", "-1"}), {"--probe-runs expects"});
  expect_failure(stepsim({"size-fifos"}), {"size-fifos needs a graph file"});
  expect_failure(stepsim({"size-fifos", path("missing.yaml")}), {"missing.yaml"});
  expect_failure(stepsim({"size-fifos", in, "--set", "no_such_key=1"}), {"no_such_key"});
  expect_failure(stepsim({"size-fifos", in, "-o", path("no/such/folder/g.yaml")}), {"no/such/folder"});
  EXPECT_FALSE(fs::exists(path("no")));
}

TEST_F(SizeFifos, AGraphThatCannotRunWritesNothing) {
  const std::string in =
      write("bad.yaml",
            "streams:\n  d: '1 2 D'\n  sel: '{0} {1} {0} D'\nnodes:\n"
            "  - {name: d, op: Source, params: {stream: d}}\n"
            "  - {name: sel, op: Source, params: {stream: sel}}\n"
            "  - {name: p, op: Partition, params: {rank: 0}, inputs: {in: d, sel: sel}, outputs: 2}\n"
            "  - {name: k0, op: Sink, inputs: {in: p.out0}}\n"
            "  - {name: k1, op: Sink, inputs: {in: p.out1}}\n");
  const std::string out = write("sized.yaml", "stale");
  // The static check of every run (analyze's) rejects it before the first run.
  expect_failure(stepsim({"size-fifos", in, "-o", out}), {"node 'p' (Partition)"});
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::exists(in));
}

}  // namespace
}  // namespace stepsim_cli_test
