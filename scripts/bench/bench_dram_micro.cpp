// Micro-benchmarks of the `dram` HBM model against theory (docs/hbm-dram-validation.md), in the
// style of Ramulator 2's validation: streaming bandwidth, read/write turnaround, idle latency,
// random reads, activation rates. Each case drives a fresh model (the patterns and their
// formulas: testbench/dram/dram_patterns.h) and prints the model's figure, the theory and the
// difference, then the requests per second of the model alone (wall time of each case).
//
//   bench_dram_micro [--requests N] [--json]
//
//   --requests N  requests per case (default 1000000)
//   --json        the figures and speeds as JSON on stdout instead of the tables
//
// Exit status: 0 if every figure is within its stated tolerance of theory, 1 if not, 2 for a
// bad argument.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "testbench/dram/dram_patterns.h"

namespace {

using namespace stepsim::dram_micro;

struct Timed {
  const Case* c;
  CaseResult result;
  double seconds;
};

std::string check_text(const Figure& f) {
  switch (f.check) {
    case Check::kExact:
      return "exact";
    case Check::kWithin:
      return "within " + std::to_string(f.tolerance * 100).substr(0, 5) + "%";
    case Check::kAtMost:
      return "at most";
  }
  return "";
}

// JSON string literal (the names hold no control characters).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

void print_tables(const std::vector<Timed>& runs, uint64_t requests) {
  std::printf("# dram model micro-benchmarks against theory, %llu requests per case\n",
              static_cast<unsigned long long>(requests));
  std::printf("%-62s %11s %11s %-9s %8s  %-13s %s\n", "figure", "model", "theory", "unit", "diff", "check", "");
  for (const Timed& r : runs)
    for (const Figure& f : r.result.figures)
      std::printf("%-62s %11.4f %11.4f %-9s %+7.3f%%  %-13s %s\n", f.name.c_str(), f.measured, f.theory,
                  f.unit.c_str(), 100 * f.difference(), check_text(f).c_str(), f.ok() ? "ok" : "OFF THEORY");
  std::printf("\n# theory formulas\n");
  for (const Timed& r : runs)
    for (const Figure& f : r.result.figures) std::printf("%-62s %s\n", f.name.c_str(), f.formula.c_str());
  std::printf("\n# requests/s of the model alone (wall time of each case: model calls and address generation)\n");
  std::printf("%-50s %10s %10s %12s\n", "case", "requests", "wall s", "Mrequests/s");
  for (const Timed& r : runs)
    std::printf("%-50s %10llu %10.3f %12.2f\n", r.c->name.c_str(), static_cast<unsigned long long>(r.result.requests),
                r.seconds, double(r.result.requests) / r.seconds / 1e6);
}

void print_json(const std::vector<Timed>& runs, uint64_t requests) {
  std::printf("{\"requests_per_case\": %llu, \"cases\": [\n", static_cast<unsigned long long>(requests));
  for (size_t i = 0; i < runs.size(); ++i) {
    const Timed& r = runs[i];
    std::printf("  {\"name\": %s, \"requests\": %llu, \"wall_seconds\": %.6f, \"requests_per_second\": %.1f, \"figures\": [",
                quoted(r.c->name).c_str(), static_cast<unsigned long long>(r.result.requests), r.seconds,
                double(r.result.requests) / r.seconds);
    for (size_t j = 0; j < r.result.figures.size(); ++j) {
      const Figure& f = r.result.figures[j];
      std::printf("%s\n    {\"name\": %s, \"unit\": %s, \"model\": %.9g, \"theory\": %.9g, \"difference\": %.6g, "
                  "\"check\": %s, \"ok\": %s, \"formula\": %s}",
                  j ? "," : "", quoted(f.name).c_str(), quoted(f.unit).c_str(), f.measured, f.theory, f.difference(),
                  quoted(check_text(f)).c_str(), f.ok() ? "true" : "false", quoted(f.formula).c_str());
    }
    std::printf("]}%s\n", i + 1 < runs.size() ? "," : "");
  }
  std::printf("]}\n");
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t requests = 1000000;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
      char* end = nullptr;
      requests = std::strtoull(argv[++i], &end, 10);
      if (*end != '\0' || requests < 1024) {
        std::fprintf(stderr, "--requests needs a whole number >= 1024, got '%s'\n", argv[i]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: %s [--requests N] [--json]\n", argv[0]);
      return 2;
    }
  }
  std::vector<Timed> runs;
  try {
    for (const Case& c : cases()) {
      const auto t0 = std::chrono::steady_clock::now();
      CaseResult r = c.run(requests);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      runs.push_back({&c, std::move(r), seconds});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_dram_micro: %s\n", e.what());
    return 2;
  }
  json ? print_json(runs, requests) : print_tables(runs, requests);
  for (const Timed& r : runs)
    for (const Figure& f : r.result.figures)
      if (!f.ok()) return 1;
  return 0;
}
