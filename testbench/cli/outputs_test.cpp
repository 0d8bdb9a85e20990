// What the commands that write files say and leave behind: `build -o` and `downtile -o` say what
// they wrote; graph files and the analysis JSON go through OutputFile (a symbolic link stays a
// link); a failed `run` removes an old report only when it is a regular file (never a FIFO or a
// link).
#include <sys/stat.h>

#include "sim/graph/loader.h"
#include "testbench/cli/cli_fixture.h"

namespace {

using namespace stepsim_cli_test;

size_t nodes_in(const std::string& file) { return stepsim::load_graph(file, {}).nodes.size(); }

TEST_F(Cli, BuildAndDowntileSayWhatTheyWrote) {
  const std::string logical = path("swiglu.yaml"), blocks = path("swiglu16.yaml");
  CliRun b = stepsim({"build", "swiglu", "-o", logical});
  EXPECT_EQ(b.status, 0) << b.output;
  EXPECT_EQ(b.output, "wrote " + logical + " (" + std::to_string(nodes_in(logical)) + " nodes)\n");
  EXPECT_EQ(nodes_in(logical), 11u);
  CliRun d = stepsim({"downtile", logical, "--tile", "16", "--out", blocks});
  EXPECT_EQ(d.status, 0) << d.output;
  EXPECT_EQ(d.output, "wrote " + blocks + " (" + std::to_string(nodes_in(blocks)) + " nodes)\n");
  EXPECT_GT(nodes_in(blocks), nodes_in(logical));
  // Without -o the graph itself is the output, and nothing is said.
  CliRun y = stepsim({"build", "swiglu"});
  EXPECT_EQ(y.output, read_text(logical));
  // A file that cannot be written is an error naming it; nothing is left in its folder.
  fs::create_directories(path("adir"));
  CliRun bad = stepsim({"build", "swiglu", "-o", path("adir")});
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.output, "error: cannot write the graph file '" + path("adir") + "': it is a folder\n");
  CliRun missing = stepsim({"build", "swiglu", "-o", path("no/such/dir/g.yaml")});
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find("'" + path("no/such/dir/g.yaml") + "'"), std::string::npos) << missing.output;
}

TEST_F(Cli, GraphAndAnalysisFilesReplaceASymlinksTargetNotTheLink) {
  const std::string target = write("real.yaml", "old\n"), link = path("link.yaml");
  fs::create_symlink(target, link);
  ASSERT_EQ(stepsim({"build", "swiglu", "-o", link}).status, 0);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_text(target), stepsim({"build", "swiglu"}).output);

  const std::string json = write("real.json", "old\n"), jlink = path("link.json");
  fs::create_symlink(json, jlink);
  CliRun a = stepsim({"analyze", target, "--json", jlink});
  ASSERT_EQ(a.status, 0) << a.output;
  EXPECT_TRUE(fs::is_symlink(jlink));
  EXPECT_EQ(read_text(json).rfind("{\n", 0), 0u) << read_text(json);
  CliRun dir = stepsim({"analyze", target, "--json", dir_.string()});
  EXPECT_EQ(dir.status, 1);
  EXPECT_NE(dir.output.find("error: cannot write the analysis '" + dir_.string() + "': it is a folder"),
            std::string::npos)
      << dir.output;
}

TEST_F(Cli, AFailedRunRemovesOnlyARegularFileLeftAtItsReportPath) {
  const std::string bad = write("bad.yaml", "nodez: []\n");
  const std::string fifo = path("report.fifo"), link = path("report.link"), target = write("old.json", "{}\n");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink(target, link);
  EXPECT_EQ(stepsim({"run", bad, "--report", fifo, "--trace", link}).status, 1);
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::exists(target));
  // A regular file of an earlier run is removed (it would look like this run's report).
  const std::string old = write("old_report.json", "{\"cycles\": 6}\n");
  EXPECT_EQ(stepsim({"run", bad, "--report", old}).status, 1);
  EXPECT_FALSE(fs::exists(old));
  // Never the graph itself.
  EXPECT_EQ(stepsim({"run", bad, "--report", bad}).status, 1);
  EXPECT_TRUE(fs::exists(bad));
}

}  // namespace
