// Shape operators on the paper's examples (step-paper-notes §8 items 1 and 3).
#include "testutil.h"

namespace stepsim {
namespace {
using test::run;

TEST(Flatten, MergesInnerTwoDimensionsIntoRaggedOne) {
  auto o = run("Flatten", {{"min", "0"}, {"max", "1"}}, {{"", "1 2 S1 3 S2 4 S1 5 6 7 S2 D"}});
  EXPECT_EQ(o["out"], "1 2 3 S1 4 5 6 7 S1 D");
}

TEST(Flatten, EmptyRowsVanish) {
  auto o = run("Flatten", {{"min", "0"}, {"max", "1"}}, {{"", "1 S1 S1 S2 D"}});
  EXPECT_EQ(o["out"], "1 S1 D");
}

TEST(Reshape, SeventeenRowsPadToTwoChunksOfSixteen) {
  std::string in;
  for (int i = 1; i <= 17; ++i) in += std::to_string(i) + " ";
  auto o = run("Reshape", {{"chunk", "16"}}, {{"", in + "D"}});
  std::string expect, pad;
  for (int i = 1; i <= 16; ++i) expect += std::to_string(i) + (i == 16 ? " S1 " : " ");
  for (int i = 1; i <= 16; ++i) pad += std::string("0") + (i == 16 ? " S1 " : " ");
  expect += "17";
  pad += "0";
  for (int i = 0; i < 15; ++i) {
    expect += " 0";
    pad += " 1";
  }
  EXPECT_EQ(o["out"], expect + " S1 D");
  EXPECT_EQ(o["pad"], pad + " S1 D");  // 15 padded elements flagged
}

TEST(Reshape, RowEndsBecomeHigherStops) {
  auto o = run("Reshape", {{"chunk", "2"}}, {{"", "1 2 3 S1 4 S1 D"}});
  EXPECT_EQ(o["out"], "1 2 S1 3 0 S2 4 0 S2 D");
}

TEST(Reshape, OuterDimensionMustDivide) {
  auto o = run("Reshape", {{"chunk", "2"}, {"rank", "1"}}, {{"", "1 S1 2 S1 3 S1 4 S2 D"}});
  EXPECT_EQ(o["out"], "1 S1 2 S2 3 S1 4 S3 D");
  EvalResult bad = eval_op("Reshape", {{"chunk", "2"}, {"rank", "1"}}, {{"", "1 S1 2 S1 3 S2 D"}}, test::artifact());
  EXPECT_FALSE(bad.sim.ok);
  EXPECT_NE(bad.sim.error.find("not a multiple"), std::string::npos);
}

TEST(Promote, EmptyStreamGetsOuterDimensionZero) {
  auto o = run("Promote", {}, {{"", "D"}});
  EXPECT_EQ(o["out"], "D");
}

TEST(Promote, NonEmptyStreamGetsOuterDimensionOne) {
  auto o = run("Promote", {}, {{"", "1 2 S1 3 S1 D"}});
  EXPECT_EQ(o["out"], "1 2 S1 3 S2 D");
  auto o0 = run("Promote", {}, {{"", "1 2 3 D"}});
  EXPECT_EQ(o0["out"], "1 2 3 S1 D");
}

TEST(Promote, InnerPositionWrapsEveryElement) {
  auto o = run("Promote", {{"rank", "0"}}, {{"", "1 2 S1 D"}});
  EXPECT_EQ(o["out"], "1 S1 2 S2 D");
}

TEST(Repeat, AddsInnermostDimension) {
  auto o = run("Repeat", {{"count", "3"}}, {{"", "1 2 S1 D"}});
  EXPECT_EQ(o["out"], "1 1 1 S1 2 2 2 S2 D");
}

TEST(Expand, FollowsTheReferenceStructure) {
  // data [2,1] expanded along ref [2, ragged]
  auto o = run("Expand", {{"rank", "1"}}, {{"", "7 S1 8 S1 D"}, {"ref", "0 0 0 S1 0 S1 D"}});
  EXPECT_EQ(o["out"], "7 7 7 S1 8 S1 D");
}

TEST(Expand, EmptyReferenceGroupRepeatsZeroTimes) {
  auto o = run("Expand", {{"rank", "1"}}, {{"", "7 S1 8 S1 D"}, {"ref", "S1 0 0 S1 D"}});
  EXPECT_EQ(o["out"], "S1 8 8 S1 D");
}

TEST(Zip, PairsElements) {
  auto o = run("Zip", {}, {{"", "1 2 S1 D"}, {"", "3 4 S1 D"}});
  EXPECT_EQ(o["out"], "(1,3) (2,4) S1 D");
  EvalResult bad = eval_op("Zip", {}, {{"", "1 2 S1 D"}, {"", "3 S1 D"}}, test::artifact());
  EXPECT_FALSE(bad.sim.ok);
}

}  // namespace
}  // namespace stepsim
