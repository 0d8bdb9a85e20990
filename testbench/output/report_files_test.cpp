// The files `stepsim run` writes (--report, --trace, functional .npy outputs), through the real
// binary: a symlink keeps being a link, a FIFO is written in place, a folder or a file-size
// limit is an error with exit status 1 and leaves no file that looks complete.
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "testbench/output/output_util.h"

namespace {

using namespace stepsim_output_test;

using ReportFiles = OutputTest;

const std::string kRouting = kExamples + "routing.yaml";

TEST_F(ReportFiles, ReportToASymlinkReplacesTheTargetAndKeepsTheLink) {
  fs::create_directories(dir_ / "real");
  write_text(path("real/r.json"), "old\n");
  fs::create_symlink("real/r.json", dir_ / "link.json");
  Command r = shell(kStepsim + " run " + kRouting + " --report " + path("link.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "link.json")));
  const auto j = nlohmann::json::parse(read_text(path("real/r.json")));
  EXPECT_EQ(j["graph"], "routing");
  EXPECT_EQ(names_in(dir_ / "real"), std::set<std::string>{"r.json"});
}

TEST_F(ReportFiles, ReportAndTraceToFifosAreWrittenDirectly) {
  ASSERT_EQ(::mkfifo(path("report").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(path("trace").c_str(), 0600), 0);
  std::string report, trace;
  std::thread r1([&] { report = read_text(path("report")); });
  std::thread r2([&] { trace = read_text(path("trace")); });
  Command r = shell(kStepsim + " run " + kRouting + " --report " + path("report") + " --trace " + path("trace"));
  r1.join();
  r2.join();
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(report)["graph"], "routing");
  EXPECT_TRUE(nlohmann::json::parse(trace).contains("traceEvents"));
  struct stat st {};
  ASSERT_EQ(::lstat(path("report").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"report", "trace"}));
}

TEST_F(ReportFiles, ReportToAFolderIsAnErrorWithNothingLeftBehind) {
  fs::create_directories(dir_ / "out");
  Command r = shell("cd " + dir_.string() + " && " + kStepsim + " run " + kRouting + " --report out");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("error: cannot write the report 'out': it is a folder\n"), std::string::npos) << r.output;
  EXPECT_EQ(names_in(dir_), std::set<std::string>{"out"});
  EXPECT_TRUE(fs::is_empty(dir_ / "out"));
}

// `ulimit -f 1`: 1 KiB, less than the report and the trace need.
TEST_F(ReportFiles, FileSizeLimitFailsTheRunWithNoPartialReport) {
  for (const char* flag : {"--report", "--trace"}) {
    write_text(path("r.json"), "from an earlier run\n");
    Command r = shell("cd " + dir_.string() + " && ulimit -f 1 && trap \"\" XFSZ && " + kStepsim + " run " + kRouting +
                      " " + flag + " r.json");
    EXPECT_EQ(r.status, 1) << flag << ": " << r.output;
    const std::string what = std::string(flag) == "--report" ? "report" : "trace";
    EXPECT_NE(r.output.find("error: cannot write the " + what + " 'r.json': File too large\n"), std::string::npos)
        << r.output;
    // The failed run leaves neither a partial file nor the earlier run's (it would look like this run's).
    EXPECT_EQ(names_in(dir_), std::set<std::string>{}) << flag;
  }
}

TEST_F(ReportFiles, StoredTensorsGoThroughTheSameRules) {
  // higher_order.yaml stores y and ysum in functional mode.
  fs::create_directories(dir_ / "real");
  fs::create_symlink("real/y_data.npy", dir_ / "y.npy");
  Command r = shell(kStepsim + " run " + kExamples + "higher_order.yaml --mode functional --out " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "y.npy")));
  EXPECT_EQ(read_text(path("real/y_data.npy")).substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"real", "y.npy", "ysum.npy"}));
  // A folder in the way is an error naming the file.
  fs::remove(dir_ / "ysum.npy");
  fs::create_directories(dir_ / "ysum.npy");
  r = shell(kStepsim + " run " + kExamples + "higher_order.yaml --mode functional --out " + dir_.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("error: cannot write the tensor '" + path("ysum.npy") + "': it is a folder\n"),
            std::string::npos)
      << r.output;
}

}  // namespace
