// Bufferize/Streamify round trips (step-paper-notes §8 item 5).
#include "sim/engine/simulation.h"
#include "testutil.h"

namespace stepsim {
namespace {
using test::run;

TEST(Bufferize, RankTwoOverNRCGivesNBuffers) {
  auto o = run("Bufferize", {{"rank", "2"}}, {{"", "1 2 S1 3 4 S2 5 6 S1 7 8 S2 D"}});
  EXPECT_EQ(o["out"], "Buf[2x2](1 2 S1 3 4 S2) Buf[2x2](5 6 S1 7 8 S2) D");
  auto raggy = run("Bufferize", {{"rank", "1"}}, {{"", "1 2 S1 3 S2 D"}});
  EXPECT_EQ(raggy["out"], "Buf[2](1 2 S1) Buf[1](3 S1) S1 D");
}

// Round trips through one graph, Bufferize -> Streamify (a printed buffer reads back too:
// invariants_test.cpp).
std::string round_trip(const std::string& data, int rank, const std::map<std::string, std::string>& streamify,
                       const std::string& ref = "") {
  Graph g;
  g.name = "rt";
  g.streams["data"] = to_beats(parse_tokens(data));
  g.nodes.push_back(node_spec("src", "Source", {{"stream", "data"}}));
  g.nodes.push_back(node_spec("buf", "Bufferize", {{"rank", std::to_string(rank)}}, {{"in", "src.out0"}}));
  NodeSpec s = node_spec("str", "Streamify", streamify, {{"in", "buf"}});
  if (!ref.empty()) {
    g.streams["ref"] = to_beats(parse_tokens(ref));
    g.nodes.push_back(node_spec("refsrc", "Source", {{"stream", "ref"}}));
    s.inputs["ref"] = "refsrc.out0";
  }
  g.nodes.push_back(s);
  g.nodes.push_back(node_spec("sink", "Sink", {}, {{"in", "str"}}));
  SimOptions opt;
  opt.hw = test::artifact();
  SimResult r = simulate(g, opt);
  EXPECT_TRUE(r.ok) << r.error;
  return format_beats(r.recorded["sink"]);
}

TEST(Streamify, StaticRepeatReplaysEachBuffer) {
  // [N=1,R=2,C=2] bufferized at rank 2, replayed twice: [1, 2, 2, 2].
  EXPECT_EQ(round_trip("1 2 S1 3 4 S2 D", 2, {{"repeat", "[2]"}}), "1 2 S1 3 4 S2 1 2 S1 3 4 S3 D");
}

TEST(Streamify, ReferenceDrivenRepeatIsDynamic) {
  // Two buffers; the ref [2, k] replays the first twice and the second three times.
  EXPECT_EQ(round_trip("1 2 S1 3 S1 D", 1, {{"rank", "1"}}, "0 0 S1 0 0 0 S1 D"), "1 2 S1 1 2 S2 3 S1 3 S1 3 S2 D");
}

TEST(Streamify, AffineViewTransposesAStaticBuffer) {
  // 2x2 buffer read column-major through stride [1,2], out_shape [2,2].
  EXPECT_EQ(round_trip("1 2 S1 3 4 S2 D", 2, {{"repeat", "[1]"}, {"stride", "[1,2]"}, {"out_shape", "[2,2]"}}),
            "1 3 S1 2 4 S3 D");
}

TEST(Streamify, RaggedBufferIsReadLinearly) {
  EXPECT_EQ(round_trip("1 2 S1 3 S2 D", 2, {{"repeat", "[1]"}, {"stride", "[1,2]"}, {"out_shape", "[2,2]"}}),
            "1 2 S1 3 S3 D");
}

}  // namespace
}  // namespace stepsim
