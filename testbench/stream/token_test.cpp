// Logical tokens, the physical beat encoding and the text notation (step-paper-notes §1.2, §8 item 1).
#include <gtest/gtest.h>

#include "hw/stream/token.h"

namespace stepsim {
namespace {

TEST(Tokens, PaperExampleRoundTripsThroughBeats) {
  const std::string text = "1 2 S1 3 S2 4 S1 5 6 7 S2 D";
  auto tokens = parse_tokens(text);
  auto beats = to_beats(tokens);
  // Stops ride on the last element of their dimension: 7 elements -> 7 beats, D rides too.
  ASSERT_EQ(beats.size(), 7u);
  EXPECT_EQ(beats[1].stop, 1);
  EXPECT_EQ(beats[2].stop, 2);
  EXPECT_TRUE(beats[6].done);
  EXPECT_EQ(format_tokens(to_tokens(beats)), text);
}

TEST(Tokens, PaperExampleShapeIsTwoByTwoByRagged) {
  auto s = observe_shape(parse_tokens("1 2 S1 3 S2 4 S1 5 6 7 S2 D"), 2);
  EXPECT_EQ(s.dims, (std::vector<int64_t>{2, 2, -1}));
  EXPECT_EQ(s.to_string(), "[2, 2, ragged]");
}

TEST(Tokens, EmptyDimensionsUseBareStopBeats) {
  // Row [1], then an empty row, then the matrix ends: S1 S1 cannot merge.
  auto beats = to_beats(parse_tokens("1 S1 S2 D"));
  ASSERT_EQ(beats.size(), 2u);
  EXPECT_FALSE(beats[1].has_elem);
  EXPECT_EQ(beats[1].stop, 2);
  EXPECT_EQ(format_beats(beats), "1 S1 S2 D");
  EXPECT_EQ(observe_shape(parse_tokens("1 S1 S2 D"), 2).dims, (std::vector<int64_t>{1, 2, -1}));
}

TEST(Tokens, EmptyStreamIsOneDoneBeat) {
  auto beats = to_beats(parse_tokens("D"));
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_TRUE(beats[0].done);
  EXPECT_FALSE(beats[0].has_elem);
  EXPECT_EQ(observe_shape(parse_tokens("D"), 1).dims[0], 0);
}

TEST(Tokens, SelectorsTilesAndTuples) {
  auto t = parse_tokens("{0,7} {} T[16x64] T[2x2:fp32] (1,T[1x1]) D");
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].elem.selector().indices(), (std::vector<int>{0, 7}));
  EXPECT_EQ(t[1].elem.selector().count(), 0);
  EXPECT_EQ(t[2].elem.tile().bytes(), 16u * 64 * 2);
  EXPECT_EQ(t[3].elem.tile().dtype, DType::FP32);
  EXPECT_EQ(format_tokens(t), "{0,7} {} T[16x64] T[2x2:fp32] (1,T[1x1]) D");
}

TEST(Tokens, SelectorsHoldAtLeast256Outputs) {
  auto t = parse_tokens("{0,127,255} D");
  EXPECT_EQ(t[0].elem.selector().indices(), (std::vector<int>{0, 127, 255}));
  EXPECT_THROW(parse_tokens("{256} D"), std::invalid_argument);
}

TEST(Tokens, MalformedInputIsRejectedWithTheWord) {
  EXPECT_THROW(to_beats(parse_tokens("1 2")), std::invalid_argument);  // no D
  EXPECT_THROW(to_beats(parse_tokens("1 D 2")), std::invalid_argument);
  try {
    parse_tokens("1 x2 D");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("x2"), std::string::npos);
  }
  EXPECT_THROW(parse_tokens("S16 D"), std::invalid_argument);
  EXPECT_THROW(observe_shape(parse_tokens("1 S1 2 D"), 1), std::invalid_argument);  // unterminated
}

}  // namespace
}  // namespace stepsim
