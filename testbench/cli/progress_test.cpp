// Progress of long runs: SimOptions::progress is called from a watcher thread while the graph
// runs, and `stepsim run` shows it on stderr only when stderr is a terminal, erased at the end.
#include <fcntl.h>
#include <pty.h>

#include <cerrno>
#include <chrono>
#include <regex>

#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "testbench/cli/cli_fixture.h"

namespace {

using namespace stepsim_cli_test;

// One tile repeated outer x inner times and summed: 1.5 cycles per copy, a few beats in flight,
// nothing recorded but the sum (the Sink keeps every beat it gets).
const std::string kRepeat =
    "params: {outer: 1, inner: 1}\n"
    "streams:\n"
    "  a: 'T[16x64] S1 D'\n"
    "nodes:\n"
    "  - {name: src, op: Source, params: {stream: a}}\n"
    "  - {name: rep1, op: Repeat, params: {count: '${outer}'}, inputs: {in: src}}\n"
    "  - {name: rep2, op: Repeat, params: {count: '${inner}'}, inputs: {in: rep1}}\n"
    "  - {name: sum, op: Accum, params: {fn: add, rank: 2}, inputs: {in0: rep2}}\n"
    "  - {name: sink, op: Sink, inputs: {in: sum}}\n";

TEST_F(Cli, SimulationReportsProgressWhileItRuns) {
  const stepsim::Graph g = stepsim::load_graph(write("rep.yaml", kRepeat), {{"outer", "300"}, {"inner", "10000"}});
  stepsim::SimOptions opt;
  opt.hw = stepsim::load_preset("step-artifact");
  const stepsim::SimResult plain = stepsim::simulate(g, opt);
  ASSERT_TRUE(plain.ok) << plain.error;

  std::vector<stepsim::SimProgress> seen;  // written by the watcher thread, read after the run
  opt.progress = [&seen](const stepsim::SimProgress& p) { seen.push_back(p); };
  opt.progress_interval = 0.005;
  const stepsim::SimResult watched = stepsim::simulate(g, opt);
  ASSERT_TRUE(watched.ok) << watched.error;
  EXPECT_EQ(watched.cycles, plain.cycles);
  ASSERT_GE(seen.size(), 2u) << "a run of " << watched.wall_seconds << " s";
  for (size_t k = 1; k < seen.size(); ++k) {
    EXPECT_GE(seen[k].cycles, seen[k - 1].cycles);
    EXPECT_GT(seen[k].wall_seconds, seen[k - 1].wall_seconds);
  }
  EXPECT_LE(seen.back().cycles, watched.cycles);
  EXPECT_GT(seen.back().cycles, 0u);
}

// Runs stepsim with stderr on a pseudo-terminal and stdout in a file; returns what the terminal got.
std::string run_on_terminal(const std::vector<std::string>& args, const std::string& out_file, int& status) {
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    const int fd = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    std::vector<std::string> all = {STEPSIM_BINARY};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string seen;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0)
      seen.append(buf, size_t(n));
    else if (n < 0 && errno == EINTR)
      continue;
    else
      break;  // EIO once the child has closed the terminal
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  ::close(master);
  status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return seen;
}

// `run` of the graph with enough copies for about `seconds` of wall time on this machine (timed
// on 3 million), so that a status line (shown after one second) is due however fast it is.
std::vector<std::string> long_run(const std::string& graph, double seconds, uint64_t& copies) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(
      std::system((command({"run", graph, "--set", "outer=300", "--set", "inner=10000"}) + " > /dev/null").c_str()), 0);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t outer = std::max<uint64_t>(300, uint64_t(300 * seconds / wall));
  copies = outer * 10000;
  return {"run", graph, "--set", "outer=" + std::to_string(outer), "--set", "inner=10000"};
}

TEST_F(Cli, RunShowsProgressOnATerminalAndErasesIt) {
  const std::string g = write("rep.yaml", kRepeat), out = path("summary.txt");
  uint64_t copies = 0;
  const std::vector<std::string> args = long_run(g, 2.5, copies);
  int status = -1;
  const std::string terminal = run_on_terminal(args, out, status);
  EXPECT_EQ(status, 0) << terminal;
  // Only status lines, each rewritten in place, then the line erased: nothing is left behind.
  EXPECT_TRUE(std::regex_match(
      terminal, std::regex("(\rsimulating: [0-9]+ cycles so far, [0-9.]+ [kMGT]?cycles/s\x1b\\[K)+\r\x1b\\[K")))
      << terminal;
  const std::string summary = read_text(out);
  EXPECT_NE(summary.find("  cycles                     " + std::to_string(copies * 3 / 2 + 3) + " cycles\n"),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("simulating"), std::string::npos) << summary;
}

TEST_F(Cli, NoProgressWhenStderrIsNotATerminal) {
  uint64_t copies = 0;
  CliRun r = stepsim(long_run(write("rep.yaml", kRepeat), 1.5, copies));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("simulating"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\r'), std::string::npos) << r.output;
}

}  // namespace
