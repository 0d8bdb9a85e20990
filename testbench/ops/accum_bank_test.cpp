// Accum with an accumulator bank (bank_rank, hw/ops/higher_order.cpp): the token structure of
// its output, its equality with a rank-2 Accum over the reordered stream (bit for bit, through
// real tensors), and its errors.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>

#include "sim/graph/loader.h"
#include "sim/graph/npy.h"
#include "testbench/ops/testutil.h"

namespace stepsim {
namespace {

using test::artifact;

std::string bank_out(const std::string& bank_rank, const std::string& in) {
  EvalResult r = eval_op("Accum", {{"fn", "add"}, {"rank", "2"}, {"bank_rank", bank_rank}}, {{"", in}}, artifact());
  EXPECT_TRUE(r.sim.ok) << r.sim.error;
  return r.text["out"];
}

std::string bank_error(const std::map<std::string, std::string>& params, const std::string& in) {
  EvalResult r = eval_op("Accum", params, {{"", in}}, artifact());
  EXPECT_FALSE(r.sim.ok);
  return r.sim.error;
}

// [C, B, K] with q = 1: two chunks of two entries (K runs of 2 and 1 elements). The bank leaves
// after the last chunk: entry 0 with its bank stop (none), entry 1 with S3 - 2 = S1 and the done.
TEST(AccumBank, EmitsTheBankAfterTheLastChunk) {
  EXPECT_EQ(bank_out("1", "T[4x4] T[4x4] S1 T[4x4] S2 T[4x4] T[4x4] S1 T[4x4] S3 D"), "T[4x4] T[4x4] S1 D");
  // One chunk only: the bank is the chunk's K runs.
  EXPECT_EQ(bank_out("1", "T[4x4] S1 T[4x4] S1 T[4x4] S3 D"), "T[4x4] T[4x4] T[4x4] S1 D");
  // Two outer groups (S4 closes each): each emits its own bank.
  EXPECT_EQ(bank_out("1", "T[4x4] S1 T[4x4] S2 T[4x4] S1 T[4x4] S4 T[4x4] S1 T[4x4] S4 D"),
            "T[4x4] T[4x4] S2 T[4x4] T[4x4] S2 D");
}

// q = 2, bank [2 x 2], K = 1, two chunks: the entries keep the stops of the bank dims (S1 after
// the first row of the bank), the last one the closing S4 - 2.
TEST(AccumBank, BankDimensionsKeepTheirStops) {
  const std::string chunk0 = "T[4x4] S1 T[4x4] S2 T[4x4] S1 T[4x4] S3 ";
  const std::string chunk1 = "T[4x4] S1 T[4x4] S2 T[4x4] S1 T[4x4] S4 ";
  EXPECT_EQ(bank_out("2", chunk0 + chunk1 + "D"), "T[4x4] T[4x4] S1 T[4x4] T[4x4] S2 D");
}

TEST(AccumBank, Errors) {
  // A later chunk with another bank structure.
  EXPECT_NE(bank_error({{"fn", "add"}, {"rank", "2"}, {"bank_rank", "1"}}, "T[4x4] S1 T[4x4] S2 T[4x4] S3 D")
                .find("every chunk must have the first chunk's bank structure"),
            std::string::npos);
  EXPECT_NE(bank_error({{"fn", "add"}, {"rank", "2"}, {"bank_rank", "1"}},
                       "T[4x4] S1 T[4x4] S2 T[4x4] S1 T[4x4] S1 T[4x4] S3 D")
                .find("bank structure"),
            std::string::npos);
  try {  // a bad parameter is rejected when the node is built
    eval_op("Accum", {{"fn", "add"}, {"rank", "1"}, {"bank_rank", "1"}}, {{"", "T[4x4] S2 D"}}, artifact());
    ADD_FAILURE() << "rank 1 with bank_rank 1 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bank_rank needs rank 2"), std::string::npos) << e.what();
  }
  EXPECT_NE(bank_error({{"fn", "add"}, {"rank", "2"}, {"bank_rank", "1"}}, "T[4x4] S1 S2 T[4x4] S3 D").find("bare S"),
            std::string::npos);
  // A rank-1 stream (well-formed) ends before any S3 closed the banked reduction.
  EXPECT_NE(bank_error({{"fn", "add"}, {"rank", "2"}, {"bank_rank", "1"}}, "T[4x4] S1 T[4x4] S1 D")
                .find("stream ended inside"),
            std::string::npos);
}

// y1 = A B accumulated through the bank from the stream [C, I, J, K] of [16 x 16] blocks (A 2 x 4
// blocks, B 4 x 3 blocks, K split into C = 2 chunks of 2); y2 = a rank-2 Accum over the same
// blocks in the order [I, J, C, K]. Each output block sees the same products in the same order,
// so the two are equal bit for bit.
TEST(AccumBank, EqualsRank2AccumOverTheReorderedStream) {
  const std::string yaml = R"(
tensors:
  a: {shape: [32, 64], dtype: bf16, init: random, seed: 7}
  b: {shape: [64, 48], dtype: bf16, init: random, seed: 8}
  y1: {shape: [32, 48], dtype: bf16, init: output}
  y2: {shape: [32, 48], dtype: bf16, init: output}
nodes:
  - {name: a_cijk, op: LinearOffChipLoad, params: {tensor: a, tile: [16, 16], out_shape: [2, 2, 3, 2], stride: [2, 4, 0, 1]}}
  - {name: b_cijk, op: LinearOffChipLoad, params: {tensor: b, tile: [16, 16], out_shape: [2, 2, 3, 2], stride: [6, 0, 1, 3]}}
  - {name: bank, op: Accum, params: {fn: matmul_acc, rank: 2, bank_rank: 2}, inputs: {in0: a_cijk, in1: b_cijk}}
  - {name: st1, op: LinearOffChipStore, params: {tensor: y1, tile: [16, 16]}, inputs: {in: bank}}
  - {name: a_ijck, op: LinearOffChipLoad, params: {tensor: a, tile: [16, 16], out_shape: [2, 3, 2, 2], stride: [4, 0, 2, 1]}}
  - {name: b_ijck, op: LinearOffChipLoad, params: {tensor: b, tile: [16, 16], out_shape: [2, 3, 2, 2], stride: [0, 1, 6, 3]}}
  - {name: plain, op: Accum, params: {fn: matmul_acc, rank: 2}, inputs: {in0: a_ijck, in1: b_ijck}}
  - {name: st2, op: LinearOffChipStore, params: {tensor: y2, tile: [16, 16]}, inputs: {in: plain}}
)";
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("stepsim_accum_bank_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  Graph g = parse_graph(yaml, "bank.yaml", dir, {});
  SimOptions o;
  o.hw = artifact();
  o.functional = true;
  o.output_dir = dir;
  SimResult r = simulate(g, o);
  ASSERT_TRUE(r.ok) << r.error;
  const NpyArray y1 = read_npy(dir + "/y1.npy"), y2 = read_npy(dir + "/y2.npy");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(y1.f.size(), size_t(32 * 48));
  EXPECT_EQ(y1.f, y2.f);
  bool nonzero = false;
  for (float v : y1.f) nonzero = nonzero || v != 0.0f;
  EXPECT_TRUE(nonzero);
}

}  // namespace
}  // namespace stepsim
