// Mutation test of the graph loader (testbench/mutation/graph_mutator.h): mutated example graphs
// run through the real `stepsim run`; every run either succeeds or fails with one clear line, never
// by a signal, a time-out or library text, and never succeeds where the meaning changed silently.
//
// STEPSIM_MUTANTS (default 3) sets the mutants per example and class; a campaign (one line):
//   STEPSIM_MUTANTS=100 build/testbench/test_mutation --gtest_filter='*Campaign*'
//     --gtest_also_run_disabled_tests
// prints the counts per class (ran, clean error, unclear error, crash, hang).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "testbench/mutation/graph_mutator.h"

namespace fs = std::filesystem;
using namespace stepsim::mutation;

namespace {

constexpr int kTimeoutSeconds = 60;

struct RunOutcome {
  int exit_code = -1;  // 124: timed out; > 128: killed by a signal
  std::string out, err;
  bool report_written = false;
  uint64_t cycles = 0;
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

fs::path work_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("stepsim_mutation_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

RunOutcome run_graph(const std::string& text) {
  const fs::path dir = work_dir();
  const fs::path graph = dir / "mutant.yaml", report = dir / "report.json";
  fs::remove(report);
  std::ofstream(graph) << text;
  const std::string cmd = "timeout " + std::to_string(kTimeoutSeconds) + " " + STEPSIM_BINARY + " run " +
                          graph.string() + " --report " + report.string() + " >" + (dir / "out").string() + " 2>" +
                          (dir / "err").string();
  const int status = std::system(cmd.c_str());
  RunOutcome r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(dir / "out");
  r.err = read_file(dir / "err");
  r.report_written = fs::exists(report);
  if (r.report_written) {
    try {
      r.cycles = nlohmann::json::parse(read_file(report)).at("cycles").get<uint64_t>();
    } catch (const std::exception&) {
      r.report_written = false;  // a report that does not parse is no report
    }
  }
  return r;
}

// Words that only a library's own message contains.
const char* const kLibraryText[] = {"yaml-cpp",         "stoll",    "stoul",    "stoi",      "std::",
                                    "basic_string",     "vector",   "_M_",      "bad_alloc", "bad conversion",
                                    "terminate called", "what()",   "max_size", "map::at",   "out_of_range",
                                    "Error: (E",        "Assertion"};

enum class Verdict { kRan, kCleanError, kUnclearError, kCrash, kHang };
const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kRan:
      return "ran";
    case Verdict::kCleanError:
      return "clean error";
    case Verdict::kUnclearError:
      return "unclear error";
    case Verdict::kCrash:
      return "crash";
    case Verdict::kHang:
      return "hang";
  }
  return "?";
}

Verdict classify(const RunOutcome& r) {
  if (r.exit_code == 124) return Verdict::kHang;
  if (r.exit_code > 2) return Verdict::kCrash;
  if (r.exit_code == 0) return Verdict::kRan;
  // One message: its first line starts with "error: ", and a deadlock report's further lines (the
  // blocked operators, one per line) are indented under it.
  bool one_message = r.err.rfind("error: ", 0) == 0 && !r.err.empty() && r.err.back() == '\n';
  for (size_t nl = r.err.find('\n'); one_message && nl + 1 < r.err.size(); nl = r.err.find('\n', nl + 1))
    one_message = r.err.compare(nl + 1, 2, "  ") == 0;
  for (const char* word : kLibraryText)
    if (r.err.find(word) != std::string::npos) return Verdict::kUnclearError;
  return one_message ? Verdict::kCleanError : Verdict::kUnclearError;
}

std::vector<fs::path> examples() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(STEPSIM_SOURCE_DIR) / "graphs" / "examples"))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

int mutants_per_class() {
  const char* e = std::getenv("STEPSIM_MUTANTS");
  return e ? std::max(1, std::atoi(e)) : 3;
}

struct Counts {
  std::map<Verdict, int> by_verdict;
  int wrongly_ran = 0;  // a must-reject mutant that ran
};

// Runs the mutants of one class over every example; returns the counts and adds a test failure
// for every broken rule.
Counts run_class(MutationClass c, int per_example) {
  Counts counts;
  for (const fs::path& file : examples()) {
    const Tree original = from_yaml(YAML::LoadFile(file.string()));
    const RunOutcome baseline = run_graph(to_yaml(original));
    if (baseline.exit_code != 0) {
      ADD_FAILURE() << file << " does not run once re-emitted:\n" << baseline.err;
      continue;
    }
    std::mt19937_64 rng(std::hash<std::string>{}(file.filename().string()) ^ uint64_t(c));
    for (int k = 0; k < per_example; ++k) {
      Mutant m;
      if (!mutate(original, c, rng, m)) break;
      const RunOutcome r = run_graph(m.text);
      const Verdict v = classify(r);
      ++counts.by_verdict[v];
      const std::string what = file.filename().string() + " [" + class_name(c) + "] " + m.description;
      EXPECT_TRUE(v == Verdict::kRan || v == Verdict::kCleanError)
          << what << ": " << verdict_name(v) << " (exit " << r.exit_code << ")\n"
          << r.err;
      if (v != Verdict::kRan) {
        EXPECT_FALSE(r.report_written) << what << ": a failed run left a report";
      }
      if (must_reject(c) && v == Verdict::kRan) {
        ++counts.wrongly_ran;
        ADD_FAILURE() << what << ": ran (exit 0, " << r.cycles << " cycles) but must be rejected";
      }
      if (must_run_unchanged(c)) {
        EXPECT_TRUE(v == Verdict::kRan && r.cycles == baseline.cycles)
            << what << ": " << verdict_name(v) << ", " << r.cycles << " cycles, expected " << baseline.cycles << "\n"
            << r.err;
      }
    }
  }
  return counts;
}

class Mutation : public ::testing::TestWithParam<MutationClass> {};

TEST_P(Mutation, RunsOrFailsWithOneClearLine) { run_class(GetParam(), mutants_per_class()); }

INSTANTIATE_TEST_SUITE_P(Classes, Mutation, ::testing::ValuesIn(kAllClasses),
                         [](const auto& info) { return std::string(class_name(info.param)); });

// The campaign: every class, STEPSIM_MUTANTS per example, a table of counts on stdout.
TEST(MutationCampaign, DISABLED_CountsPerClass) {
  std::cout << "class         ran  clean-error  unclear-error  crash  hang  wrongly-ran\n";
  for (MutationClass c : kAllClasses) {
    Counts n = run_class(c, mutants_per_class());
    std::cout << std::left << std::setw(13) << class_name(c) << std::right << std::setw(4)
              << n.by_verdict[Verdict::kRan] << std::setw(13) << n.by_verdict[Verdict::kCleanError] << std::setw(15)
              << n.by_verdict[Verdict::kUnclearError] << std::setw(7) << n.by_verdict[Verdict::kCrash] << std::setw(6)
              << n.by_verdict[Verdict::kHang] << std::setw(13) << n.wrongly_ran << "\n";
  }
}

}  // namespace
