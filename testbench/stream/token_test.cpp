// Logical tokens, the physical beat encoding and the text notation (step-paper-notes §1.2, §8 item 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

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

// The message of the std::invalid_argument `f` throws ("" if it throws nothing).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::string to_beats_error(const std::string& text) {
  return error_of([&] { to_beats(parse_tokens(text)); });
}

// The well-formedness rules of token.h, each with the first bad token named.
TEST(WellFormed, AStreamClosesEveryDimensionBeforeD) {
  EXPECT_EQ(to_beats_error("1 S2 2 S1 D"),
            "token 4 'D': the stream ends inside an open dimension: its rank is 2 (S2 at token 1), so it must end with "
            "S2 D, but token 3 before D is 'S1'");
  EXPECT_EQ(to_beats_error("1 S1 2 D"),
            "token 3 'D': the stream ends inside an open dimension: its rank is 1 (S1 at token 1), so it must end with "
            "S1 D, but token 2 before D is '2'");
  EXPECT_EQ(to_beats_error("1 D 2 D"), "token 2 '2': follows the done token D (token 1)");
  EXPECT_EQ(to_beats_error("1 2"), "the stream does not end with the done token D (after token 1 '2')");
  EXPECT_EQ(to_beats_error(""), "the stream is empty: it needs at least the done token D");
  // Levels built in code (not parsed) are checked too: 0 is not a stop, 16 does not fit.
  EXPECT_EQ(error_of([] {
              to_beats({Token::e(Element(Scalar{1})), Token::s(16), Token::d()});
            }),
            "token 1 'S16': stop level out of range 1..15");
  EXPECT_EQ(error_of([] { to_beats({Token::s(0), Token::d()}); }), "token 0 'S0': stop level out of range 1..15");
}

TEST(WellFormed, EmptyDimensionsAndRaggedStreamsAreLegal) {
  for (const char* text : {"D", "1 2 D", "S1 D", "S2 D", "1 S1 S1 S2 D", "1 S2 S1 S2 D", "S1 S1 S2 1 S2 D",
                           "1 2 S1 3 S2 4 S1 5 6 7 S2 D", "1 S15 D"})
    EXPECT_EQ(to_beats_error(text), "") << text;
}

TEST(WellFormed, ObservedShapeAgreesWithToBeats) {
  // Every stream to_beats accepts has a shape at its own rank.
  for (const char* text : {"1 S1 S1 S2 D", "S2 D", "1 2 D", "1 S2 S1 S2 D"}) {
    int rank = 0;
    for (const Token& t : parse_tokens(text))
      if (t.kind == Token::kStop) rank = std::max(rank, int(t.level));
    EXPECT_NO_THROW(observe_shape(parse_tokens(text), rank)) << text;
  }
}

TEST(TokenText, NumbersOutOfRangeAreNamedWithTheirPosition) {
  EXPECT_EQ(error_of([] { parse_tokens("1 12345678901234567890123 D"); }),
            "cannot parse '12345678901234567890123' at character 2: number 12345678901234567890123 out of range (a "
            "64-bit integer: -9223372036854775808..9223372036854775807)");
  EXPECT_EQ(parse_tokens("-9223372036854775808 9223372036854775807 D")[0].elem.scalar(), INT64_MIN);
  EXPECT_NE(error_of([] { parse_tokens("{99999999999999999999} D"); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tokens("S99999999999999999999 D"); }).find("out of range"), std::string::npos);
}

TEST(TokenText, TileDimensionsAreBoundedNotWrapped) {
  EXPECT_EQ(parse_tokens("T[1048576x1] D")[0].elem.tile().rows, 1048576u);
  // 2^32 + 1 rows used to become 1 row.
  EXPECT_EQ(error_of([] { parse_tokens("T[4294967297x1] D"); }),
            "cannot parse 'T[4294967297x1]' at character 0: tile dimensions must be in 0..1048576");
  EXPECT_NE(error_of([] { parse_tokens("T[1x1048577] D"); }).find("0..1048576"), std::string::npos);
}

// Printed buffers parse back to the same buffer (eval prints what it reads).
TEST(TokenText, BuffersPrintTheirContentsAndParseBack) {
  for (const char* text : {"Buf[2x3](1 2 3 S1 4 5 6 S2)", "Buf[2x?](7 S1 S2)", "Buf[1x0]()", "Buf[0]()",
                           "Buf[1]((1,Buf[1](2 S1)) S1)", "Buf[2](T[2x2] T[2x2:fp32] S1)"}) {
    const std::vector<Token> t = parse_tokens(std::string(text) + " D");
    ASSERT_EQ(t.size(), 2u) << text;
    EXPECT_EQ(t[0].elem.to_string(), text);
  }
  const Element e = parse_element("Buf[2x?](7 S1 8 9 S2)");
  const Buffer& b = *e.buffer();
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(b.rank, 2u);
  EXPECT_EQ(b.bytes, 24u);  // three scalars
  ASSERT_EQ(b.beats.size(), 3u);
  EXPECT_EQ(b.beats[0].stop, 1);
  EXPECT_EQ(b.beats[2].stop, 2);
  EXPECT_FALSE(b.beats[2].done);
  // An empty buffer is what Bufferize stores for a bare closing stop: S2 -> shape [1, 0].
  EXPECT_TRUE(parse_element("Buf[1x0]()").buffer()->beats.empty());
  EXPECT_EQ(parse_element("Buf[2x3](1 2 3 S1 4 5 6 S2)").brief(), "Buf[2x3](6 elements)");
}

TEST(TokenText, BuffersAreCheckedAgainstTheirShape) {
  EXPECT_EQ(error_of([] { parse_tokens("Buf[2x4](1 2 3 S1 4 5 6 S2) D"); }),
            "cannot parse 'Buf[2x4](1 2 3 S1 4 5 6 S2)' at character 0: the contents have shape [2x3], not [2x4]");
  EXPECT_EQ(error_of([] { parse_tokens("Buf[2x3](1 2 3 S1 4 5 6 S1) D"); }),
            "cannot parse 'Buf[2x3](1 2 3 S1 4 5 6 S1)' at character 0: the contents of a buffer of 2 dimensions are "
            "one tensor: they end with S2 and have no other stop S2 or above");
  EXPECT_NE(error_of([] { parse_tokens("Buf[1](1 S1 2 S1) D"); }).find("end with S1"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tokens("Buf[1](1 S2) D"); }).find("end with S1"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tokens("Buf[1](1 S1 D) D"); }).find("no done token"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tokens("Buf[2x2] D"); }).find("Buf[DIMS](CONTENTS)"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tokens("Buf[](1) D"); }).find("expected an integer"), std::string::npos);
  // Positions inside a buffer are the ones in the text the user wrote.
  EXPECT_EQ(error_of([] { parse_tokens("1 Buf[2](1 x S1) D"); }),
            "cannot parse 'x' at character 11: expected an integer");
}

}  // namespace
}  // namespace stepsim
