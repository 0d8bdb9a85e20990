// A random tensor's initial values made on demand (OffChipMemory::set_initial_values with
// random_values) against the same values written up front (write_values of initial_values): the
// same bytes everywhere, at any alignment, in every dtype and layout, before and after stores
// into the tensor, and no pages until a store.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "hw/memory/offchip.h"
#include "hw/presets/hardware.h"
#include "sim/engine/sc_kernel.h"
#include "sim/graph/tensors.h"

namespace stepsim {
namespace {

TensorSpec random_spec(DType dtype, uint64_t rows, uint64_t cols, uint64_t block_rows, uint64_t block_cols) {
  TensorSpec t;
  t.name = "w";
  t.rows = rows;
  t.cols = cols;
  t.dtype = dtype;
  t.init = "random";
  t.seed = 42;
  t.block_rows = block_rows;
  t.block_cols = block_cols;
  return t;
}

std::vector<uint8_t> bytes_at(OffChipMemory& m, uint64_t addr, uint64_t n) {
  std::vector<uint8_t> b(n);
  m.backing().read(addr, b.data(), n);
  return b;
}

struct Case {
  DType dtype;
  uint64_t rows, cols, block_rows, block_cols;
};

class InitialValues : public ::testing::TestWithParam<Case> {};

TEST_P(InitialValues, OnDemandEqualsWrittenUpFront) {
  const Case c = GetParam();
  const TensorSpec spec = random_spec(c.dtype, c.rows, c.cols, c.block_rows, c.block_cols);
  ScKernel kernel;
  const HardwareParams hw = load_preset("step-artifact");
  OffChipMemory eager("eager", hw, {offchip_decl(spec)}), lazy("lazy", hw, {offchip_decl(spec)});
  eager.write_values(eager.tensor("w"), initial_values(spec));
  lazy.set_initial_values(lazy.tensor("w"), random_values(spec));
  EXPECT_EQ(lazy.backing().pages(), 0u);

  const OffChipTensor& t = lazy.tensor("w");
  const uint64_t bytes = t.bytes();
  std::mt19937_64 rng(7);
  auto compare_spans = [&](const char* when) {
    EXPECT_EQ(lazy.read_values(t).f, eager.read_values(eager.tensor("w")).f) << when;
    EXPECT_EQ(lazy.read_values(t).i, eager.read_values(eager.tensor("w")).i) << when;
    for (int k = 0; k < 200; ++k) {  // spans at any byte, crossing elements, rows and pages
      const uint64_t at = rng() % bytes, n = 1 + rng() % std::min<uint64_t>(bytes - at, 9000);
      ASSERT_EQ(bytes_at(lazy, t.base + at, n), bytes_at(eager, t.base + at, n))
          << when << ": " << n << " bytes at offset " << at;
    }
  };
  compare_spans("before any store");

  // A store of a few odd bytes in the middle: the rest of its page keeps the initial values.
  const std::vector<uint8_t> junk = {1, 2, 3, 4, 5, 6, 7};
  const uint64_t at = bytes / 2 + 3;
  lazy.backing().write(t.base + at, junk.data(), junk.size());
  eager.backing().write(t.base + at, junk.data(), junk.size());
  EXPECT_GT(lazy.backing().pages(), 0u);
  compare_spans("after a store");
}

// The definition of init: random (docs/user-guide.md), written plainly: draw k of seed s is
// splitmix64's output for state s + (k + 1) * 0x9E3779B97F4A7C15; a float is its top 53 bits as a
// double in [0, 2), minus 1, rounded to float; an int32 is the draw mod 16, minus 8.
uint64_t draw(uint64_t seed, uint64_t k) {
  uint64_t z = seed + (k + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

TEST(RandomValues, AreTheDefinitionsDrawsAtAnyIndex) {
  for (uint64_t first : {uint64_t(0), uint64_t(12345), uint64_t(1) << 40}) {
    const uint64_t n = 100000;
    std::vector<float> f(n);
    random_values(random_spec(DType::BF16, 1, 1, 0, 0))(first, n, f.data());
    std::vector<int32_t> i(n);
    random_values(random_spec(DType::INT32, 1, 1, 0, 0))(first, n, i.data());
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t d = draw(42, first + k);
      const float want = float(double(d >> 11) * 0x1.0p-53 * 2.0 - 1.0);
      ASSERT_EQ(std::memcmp(&f[k], &want, 4), 0) << "draw " << first + k << ": " << f[k] << " vs " << want;
      ASSERT_EQ(i[k], int32_t(d % 16) - 8) << "draw " << first + k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DtypesAndLayouts, InitialValues,
                         ::testing::Values(Case{DType::BF16, 37, 301, 0, 0}, Case{DType::FP32, 64, 200, 0, 0},
                                           Case{DType::INT32, 10, 1000, 0, 0}, Case{DType::BF16, 64, 192, 16, 64},
                                           Case{DType::FP32, 48, 96, 8, 32}));

}  // namespace
}  // namespace stepsim
