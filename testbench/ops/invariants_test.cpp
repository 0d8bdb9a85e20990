// Invariants checked where streams are made (issue 19): no operator emits a stop level outside
// S1..S15, inputs of different lengths are named as such (never a deadlock), elements are named by
// their index counted from 0, sizes taken from data are bounded, and printed buffers read back.
#include "testutil.h"

namespace stepsim {
namespace {
using test::run;

// The run's error ("" when it succeeds), also one found as the node is built; the input
// streams must be well-formed.
std::string error_of(const std::string& op, const std::map<std::string, std::string>& params,
                     const std::vector<std::pair<std::string, std::string>>& inputs, size_t outputs = 0) {
  try {
    EvalResult r = eval_op(op, params, inputs, test::artifact(), outputs);
    return r.sim.ok ? "" : r.sim.error;
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

const std::string kTooHigh =
    "would emit stop level S16, above the highest level S15 (the stop field has 4 bits): the input's stop levels "
    "plus the operator's rank must stay within 15";

// Every operator that computes a level from an input's stop and its own rank: the sum may not
// pass S15 (the 4-bit field; before, Reassemble rank 16 emitted S18 and Partition rank -1 S255).
TEST(StopLevels, NoOperatorEmitsALevelAboveS15) {
  EXPECT_EQ(error_of("Reassemble", {{"rank", "14"}}, {{"", "1 D"}, {"sel", "{0} S1 D"}}),
            "node 'op' (Reassemble): " + kTooHigh);
  EXPECT_EQ(error_of("Repeat", {{"count", "2"}}, {{"", "1 S15 D"}}), "node 'op' (Repeat): " + kTooHigh);
  EXPECT_EQ(error_of("Promote", {}, {{"", "1 S15 D"}}), "node 'op' (Promote): " + kTooHigh);
  EXPECT_EQ(error_of("Promote", {{"rank", "0"}}, {{"", "1 S15 D"}}), "node 'op' (Promote): " + kTooHigh);
  EXPECT_EQ(error_of("Reshape", {{"chunk", "2"}}, {{"", "1 S15 D"}}), "node 'op' (Reshape): " + kTooHigh);
  EXPECT_EQ(error_of("FlatMap", {{"fn", "retile_streamify_row"}, {"rank", "2"}}, {{"", "T[2x2] S14 D"}}),
            "node 'op' (FlatMap): " + kTooHigh);
  EXPECT_EQ(error_of("ExpertAddrGen", {{"tiles_per_expert", "1"}}, {{"", "{0} S15 D"}}),
            "node 'op' (ExpertAddrGen): " + kTooHigh);
  EXPECT_EQ(
      error_of("KvCacheAddrGen", {{"tile_rows", "4"}, {"max_tiles", "2"}}, {{"idx", "0 S15 D"}, {"kv_len", "3 S15 D"}}),
      "node 'op' (KvCacheAddrGen): " + kTooHigh);
  EXPECT_EQ(error_of("Streamify", {{"repeat", "2"}}, {{"", "Buf[1](1 S1) S14 D"}}),
            "node 'op' (Streamify): " + kTooHigh);
  // At the limit they work.
  EXPECT_EQ(run("Repeat", {{"count", "2"}}, {{"", "1 S14 D"}})["out"], "1 1 S15 D");
  EXPECT_EQ(run("Reassemble", {{"rank", "14"}}, {{"", "1 S14 D"}, {"sel", "{0} D"}})["out"], "1 S15 D");
}

// Partition's selector stream longer than its data used to be reported as a deadlock that
// listed only the sinks.
TEST(StreamLengths, PartitionNamesBothPortsAndCounts) {
  EXPECT_EQ(error_of("Partition", {{"rank", "0"}}, {{"", "1 2 3 4 D"}, {"sel", "{0} {1} {0,1} {} {1} D"}}),
            "node 'op' (Partition): the selector stream 'sel' has more elements than the data stream 'in': 'in' "
            "ended (D) after 4 elements in 4 chunks, but 'sel' goes on: stream element 4 of 'sel' (counting from 0) "
            "is {1}");
  EXPECT_EQ(error_of("Partition", {{"rank", "1"}}, {{"", "1 S1 2 S2 D"}, {"sel", "{0} {1} {0} S1 D"}}),
            "node 'op' (Partition): the selector stream 'sel' has more elements than the data stream 'in': 'in' "
            "ended (D) after 2 elements in 2 chunks, but 'sel' goes on: stream element 2 of 'sel' (counting from 0) "
            "is {0}");
  EXPECT_EQ(error_of("Partition", {{"rank", "0"}}, {{"", "1 2 3 D"}, {"sel", "{0} {1} D"}}),
            "node 'op' (Partition): the data stream 'in' has more chunks than the selector stream 'sel': 'sel' ended "
            "(D) after 2 selectors, but 'in' goes on: stream element 2 of 'in' (counting from 0) is 3");
  EXPECT_EQ(error_of("Partition", {{"rank", "2"}}, {{"", "1 S1 D"}, {"sel", "{0} D"}}),
            "node 'op' (Partition): the data stream 'in' ended (D) inside a chunk: no S2 closed chunk 0 (counting "
            "from 0)");
}

TEST(StreamLengths, ReassembleNamesTheInputThatEnded) {
  EXPECT_EQ(error_of("Reassemble", {{"rank", "0"}}, {{"", "1 D"}, {"", "2 D"}, {"sel", "{0,1} {0} D"}}),
            "node 'op' (Reassemble): the selector stream 'sel' selects more chunks of input 'in0' than it has: 'in0' "
            "ended (D) after 1 chunks, but 'sel' goes on: stream element 1 of 'sel' (counting from 0) is {0}");
  EXPECT_EQ(error_of("Reassemble", {{"rank", "0"}}, {{"", "1 2 D"}, {"", "2 D"}, {"sel", "{0,1} D"}}),
            "node 'op' (Reassemble): input 'in0' has more chunks than the selector stream 'sel' selects: 'sel' ended "
            "(D) after selecting 1 chunks of it, 'in0' still has 2");
  EXPECT_EQ(error_of("Reassemble", {{"rank", "1"}}, {{"", "1 2 D"}, {"", "2 S1 D"}, {"sel", "{0,1} D"}}),
            "node 'op' (Reassemble): input 'in0' ended (D) inside a chunk: no S1 closed its chunk 0 (counting from "
            "0)");
}

TEST(StreamLengths, MergesAndDistributionsRejectAnUnclosedChunk) {
  EXPECT_EQ(error_of("EagerMerge", {{"rank", "1"}}, {{"", "1 2 D"}, {"", "3 S1 D"}}),
            "node 'op' (EagerMerge): input 'in0' ended (D) inside a chunk: no S1 closed it (the input's rank is "
            "below the merge rank 1)");
  EXPECT_EQ(error_of("Parallelize", {{"rank", "1"}}, {{"", "1 2 D"}}),
            "node 'op' (Parallelize): the input ended (D) inside a chunk: no S1 closed it (the input's rank is below "
            "the parallelize rank 1)");
}

TEST(StreamLengths, ZipExpandStreamifyAndMapNameTheLongerInput) {
  EXPECT_EQ(error_of("Zip", {}, {{"", "1 2 D"}, {"", "3 4 5 D"}}),
            "node 'op' (Zip): inputs differ in length: in0 ended (D) after 2 elements, but in1 goes on");
  EXPECT_EQ(error_of("Expand", {{"rank", "1"}}, {{"", "1 S1 2 S1 D"}, {"ref", "5 6 S1 D"}}),
            "node 'op' (Expand): the data stream 'in' is longer than the ref stream 'ref': 'ref' ended (D) after 2 "
            "elements, but 'in' goes on: stream element 1 of 'in' (counting from 0) is 2");
  EXPECT_EQ(error_of("Expand", {{"rank", "1"}}, {{"", "1 S1 D"}, {"ref", "5 6 S1 7 S1 D"}}),
            "node 'op' (Expand): the ref stream 'ref' is longer than the data stream 'in': 'in' ended (D) after 1 "
            "elements, but 'ref' goes on: stream element 2 of 'ref' (counting from 0) is 7");
  // A ref shorter than the buffer stream used to deadlock.
  EXPECT_EQ(error_of("Streamify", {{"rank", "1"}}, {{"", "Buf[1](1 S1) Buf[1](2 S1) D"}, {"ref", "0 0 S1 D"}}),
            "node 'op' (Streamify): the buffer stream 'in' is longer than the ref stream 'ref': 'ref' ended (D) after "
            "2 elements, but 'in' goes on: stream element 1 of 'in' (counting from 0) is Buf[1](1 element)");
  EXPECT_EQ(error_of("Streamify", {{"rank", "1"}}, {{"", "Buf[1](1 S1) D"}, {"ref", "0 0 S1 0 S1 D"}}),
            "node 'op' (Streamify): the ref stream 'ref' is longer than the buffer stream 'in': 'in' ended (D) after 1 "
            "buffers, but 'ref' goes on: stream element 2 of 'ref' (counting from 0) is 0");
  EXPECT_EQ(error_of("Map", {{"fn", "add"}}, {{"", "T[2x2] T[2x2] D"}, {"", "T[2x2] D"}}),
            "node 'op' (Map): in0 is longer than the other inputs: they ended (D) after 1 elements, in0 still has "
            "T[2x2] D");
  EXPECT_EQ(error_of("KvCacheAddrGen", {{"tile_rows", "4"}, {"max_tiles", "4"}}, {{"idx", "0 1 D"}, {"kv_len", "3 D"}}),
            "node 'op' (KvCacheAddrGen): idx and kv_len streams differ in structure after 0 beats: idx has 0, kv_len "
            "has 3 D");
}

// Accum and Scan given scalars said "element 1 is not a tile" for stream element 0 (the 1 was
// the value).
TEST(ElementNumbers, CountFromZeroAndSaySo) {
  EXPECT_EQ(error_of("Accum", {{"fn", "add"}}, {{"", "1 2 S1 D"}}),
            "node 'op' (Accum): stream element 0 of 'in0' (counting from 0) is 1, not a tile");
  EXPECT_EQ(error_of("Scan", {{"fn", "add"}}, {{"", "7 2 S1 D"}}),
            "node 'op' (Scan): stream element 0 of 'in0' (counting from 0) is 7, not a tile");
  EXPECT_EQ(error_of("Map", {{"fn", "exp"}}, {{"", "T[2x2] 2 S1 D"}}),
            "node 'op' (Map): stream element 1 of 'in0' (counting from 0) is 2, not a tile");
  EXPECT_EQ(error_of("Map", {{"fn", "add"}}, {{"", "T[2x2] T[2x2] D"}, {"", "T[2x2] {1} D"}}),
            "node 'op' (Map): stream element 1 of 'in1' (counting from 0) is {1}, not a tile");
  EXPECT_EQ(error_of("Map", {{"fn", "exp"}}, {{"", "(T[2x2],3) S1 D"}}),
            "node 'op' (Map): stream element 0 of 'in0' (counting from 0) is the tuple (T[2x2],3), whose member 1 (3) "
            "is not a tile");
  EXPECT_EQ(error_of("Partition", {{"rank", "0"}}, {{"", "1 2 D"}, {"sel", "{0} 5 D"}}),
            "node 'op' (Partition): stream element 1 of 'sel' (counting from 0) is 5, not a selector");
  // A buffer in a message is named by its shape, not its contents.
  EXPECT_EQ(error_of("Map", {{"fn", "exp"}}, {{"", "Buf[2](T[2x2] T[2x2] S1) D"}}),
            "node 'op' (Map): stream element 0 of 'in0' (counting from 0) is Buf[2](2 elements), not a tile");
}

// Counts taken from data never size an allocation unchecked.
TEST(DataSizes, KvLengthsAndRequestIndicesAreBounded) {
  // A KV length of 2^63 - 1 used to end in "cannot create std::vector larger than max_size()".
  EXPECT_EQ(error_of("KvCacheAddrGen", {{"tile_rows", "4"}, {"max_tiles", "4"}},
                     {{"idx", "0 D"}, {"kv_len", "9223372036854775807 D"}}),
            "node 'op' (KvCacheAddrGen): kv_len 9223372036854775807 (request 0) needs 2305843009213693952 tiles of 4 "
            "tokens, more than max_tiles 4: the limit is 16 tokens per request");
  EXPECT_EQ(error_of("KvCacheAddrGen", {{"tile_rows", "1"}, {"max_tiles", "4"}},
                     {{"idx", "9223372036854775807 D"}, {"kv_len", "3 D"}}),
            "node 'op' (KvCacheAddrGen): request index 9223372036854775807 is too large: its tile addresses r * "
            "max_tiles + t overflow 64 bits");
  EXPECT_EQ(
      run("KvCacheAddrGen", {{"tile_rows", "4"}, {"max_tiles", "4"}}, {{"idx", "2 D"}, {"kv_len", "16 D"}})["addr"],
      "8 9 10 11 S1 D");
}

TEST(DataSizes, ExpertAddressesThatOverflowAreRejected) {
  EXPECT_EQ(error_of("ExpertAddrGen", {{"tiles_per_expert", "16777216"}, {"stride", "1099511627776"}}, {{"", "{0} D"}}),
            "node 'op' (ExpertAddrGen): the tile addresses of expert 255 overflow 64 bits (base 0, stride "
            "1099511627776, tiles_per_expert 16777216)");
  EXPECT_EQ(run("ExpertAddrGen", {{"tiles_per_expert", "2"}, {"stride", "3"}}, {{"", "{1} D"}})["out"], "6 9 S1 D");
}

// Bufferize prints buffers that Streamify reads back (eval could not read its own Buf[2x3]).
TEST(Buffers, EvalReadsBackTheBuffersItPrints) {
  const std::string printed = run("Bufferize", {{"rank", "2"}}, {{"", "1 2 3 S1 4 5 6 S2 7 S1 S2 S3 D"}})["out"];
  EXPECT_EQ(printed, "Buf[2x3](1 2 3 S1 4 5 6 S2) Buf[2x?](7 S1 S2) Buf[1x0]() S1 D");
  // The same as Bufferize -> Streamify in one graph would give.
  EXPECT_EQ(run("Streamify", {{"repeat", "1"}}, {{"", printed}})["out"], "1 2 3 S1 4 5 6 S3 7 S1 S3 S4 D");
}

TEST(Eval, MalformedInputStreamsAreRejectedWithTheirPosition) {
  try {
    eval_op("Map", {{"fn", "exp"}}, {{"", "1 S2 2 S1 D"}}, test::artifact());
    ADD_FAILURE() << "a malformed stream was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "token 4 'D': the stream ends inside an open dimension: its rank is 2 (S2 at token 1), so it must end "
              "with S2 D, but token 3 before D is 'S1'");
  }
  try {
    eval_op("Partition", {}, {{"", "1 D"}, {"sel", "{0} D"}}, test::artifact(), 257);
    ADD_FAILURE() << "257 outputs were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "outputs is 257, outside the allowed range 1..256 (a selector names at most that many)");
  }
}

}  // namespace
}  // namespace stepsim
