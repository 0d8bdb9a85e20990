// Shared by the output tests: a fresh temporary folder per test, file helpers, and the real
// `stepsim` binary run through the shell (exit status and everything it printed).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

namespace stepsim_output_test {

namespace fs = std::filesystem;

inline std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

// Names in a folder (hidden temporary files included).
inline std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(dir)) s.insert(e.path().filename().string());
  return s;
}

struct Command {
  int status = -1;     // exit status (128 + signal when killed)
  std::string output;  // stdout and stderr
};

// SCRIPT run by /bin/sh.
inline Command shell(const std::string& script) {
  Command r;
  FILE* p = ::popen(("{ " + script + "\n} 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int w = ::pclose(p);
  r.status = WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w);
  return r;
}

inline const std::string kStepsim = STEPSIM_BINARY;
inline const std::string kExamples = std::string(STEPSIM_SOURCE_DIR) + "/graphs/examples/";

class OutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (std::string("stepsim_output_") + info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

}  // namespace stepsim_output_test
