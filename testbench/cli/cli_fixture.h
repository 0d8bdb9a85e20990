// The real `stepsim` binary run from a test: a private temporary folder per test, the command's
// exit status and its stdout and stderr together.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace stepsim_cli_test {

namespace fs = std::filesystem;

struct CliRun {
  int status = -1;     // exit status (-1: killed by a signal)
  std::string output;  // stdout and stderr together
};

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The first occurrence of `from` replaced by `to` (a failed expectation when it is missing).
inline std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

// The shell command line of stepsim with the given (already separated) arguments.
inline std::string command(const std::vector<std::string>& args) {
  std::string cmd = quote(STEPSIM_BINARY);
  for (const std::string& a : args) cmd += " " + quote(a);
  return cmd;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("stepsim_cli_" + std::to_string(::getpid()) + "_" + t->test_suite_name() + "_" + t->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }
  // Runs stepsim; stdout and stderr go to a file (not a terminal).
  CliRun stepsim(const std::vector<std::string>& args) const {
    const std::string out = path("output.txt");
    CliRun r;
    int rc = std::system((command(args) + " > " + quote(out) + " 2>&1").c_str());
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.output = read_text(out);
    return r;
  }
  // Expects a clean failure (exit status 1 or 2, no signal) whose message holds every word.
  void expect_failure(const CliRun& r, const std::vector<std::string>& words) const {
    EXPECT_GT(r.status, 0) << r.output;
    EXPECT_LE(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("error"), std::string::npos) << r.output;
    for (const std::string& w : words)
      EXPECT_NE(r.output.find(w), std::string::npos) << "missing '" << w << "' in:\n" << r.output;
  }

  fs::path dir_;
};

// A valid graph: one Map between a Source and a Sink.
inline const std::string kGood =
    "streams:\n"
    "  a: 'T[16x64] S1 D'\n"
    "nodes:\n"
    "  - {name: src, op: Source, params: {stream: a}}\n"
    "  - {name: m, op: Map, params: {fn: silu}, inputs: {in0: src}}\n"
    "  - {name: sink, op: Sink, inputs: {in: m}}\n";

}  // namespace stepsim_cli_test
