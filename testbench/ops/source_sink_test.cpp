// Sources and sinks: a Source with `after` inputs starts when the last of them has ended (the
// sequencing of program phases, e.g. the decoder layer's phases after their stores' acks).
#include "sim/engine/simulation.h"
#include "testutil.h"

namespace stepsim {
namespace {

SimResult run_graph(Graph& g) {
  SimOptions opt;
  opt.hw = test::artifact();
  return simulate(g, opt);
}

TEST(Source, AfterInputsDelayTheStreamUntilTheyAllEnded) {
  Graph g;
  g.name = "after";
  g.streams["slow"] = to_beats(parse_tokens("1 2 3 D"));  // beats at 0, 10, 20 (interval 10); done on the last
  g.streams["fast"] = to_beats(parse_tokens("4 D"));      // beat at 0
  g.streams["data"] = to_beats(parse_tokens("7 8 S1 D"));
  g.nodes.push_back(node_spec("slow", "Source", {{"stream", "slow"}, {"interval", "10"}}));
  g.nodes.push_back(node_spec("fast", "Source", {{"stream", "fast"}}));
  g.nodes.push_back(node_spec("gated", "Source", {{"stream", "data"}}, {{"after0", "fast"}, {"after1", "slow"}}));
  g.nodes.push_back(node_spec("sink", "Sink", {}, {{"in", "gated"}}));
  SimResult r = run_graph(g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded["sink"]), "7 8 S1 D");  // the contents of `after` are not passed on
  const uint64_t lat = test::artifact().send_latency;
  const uint64_t slow_done_arrives = 20 + lat;  // the slow stream's done rides on its beat sent at cycle 20
  // The gated source sends its first beat when the done arrives, the next one cycle later;
  // each reaches the sink one send latency later.
  ASSERT_EQ(r.recorded_times["sink"].size(), 2u);
  EXPECT_EQ(r.recorded_times["sink"][0], slow_done_arrives + lat);
  EXPECT_EQ(r.recorded_times["sink"][1], slow_done_arrives + 1 + lat);
}

TEST(Source, WithoutAfterStartsAtCycleZero) {
  Graph g;
  g.name = "plain";
  g.streams["data"] = to_beats(parse_tokens("7 D"));
  g.nodes.push_back(node_spec("src", "Source", {{"stream", "data"}}));
  g.nodes.push_back(node_spec("sink", "Sink", {}, {{"in", "src"}}));
  SimResult r = run_graph(g);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.recorded_times["sink"].size(), 1u);
  EXPECT_EQ(r.recorded_times["sink"][0], test::artifact().send_latency);
}

}  // namespace
}  // namespace stepsim
