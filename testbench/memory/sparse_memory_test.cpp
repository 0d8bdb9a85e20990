#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "hw/memory/sparse_memory.h"

namespace stepsim {
namespace {

TEST(SparseMemory, UnwrittenBytesReadZeroAndNoPagesAreAllocated) {
  SparseMemory m;
  std::vector<uint8_t> buf(10000, 0xAB);
  m.read(1ull << 40, buf.data(), buf.size());
  for (uint8_t b : buf) ASSERT_EQ(b, 0);
  EXPECT_EQ(m.pages(), 0u);
}

TEST(SparseMemory, WriteReadAcrossPageBoundaries) {
  SparseMemory m;
  std::vector<uint8_t> src(9000);
  std::iota(src.begin(), src.end(), 0);
  const uint64_t addr = 4096 * 7 - 123;  // starts 123 bytes before a page boundary
  m.write(addr, src.data(), src.size());
  EXPECT_EQ(m.pages(), 4u);  // bytes 28549..37548 touch pages 6, 7, 8, 9
  std::vector<uint8_t> dst(src.size());
  m.read(addr, dst.data(), dst.size());
  EXPECT_EQ(src, dst);
  uint8_t edge[2];
  m.read(addr - 1, edge, 2);
  EXPECT_EQ(edge[0], 0);
  EXPECT_EQ(edge[1], src[0]);
}

TEST(SparseMemory, StridedRows) {
  SparseMemory m;
  std::vector<uint8_t> tile(5 * 30);
  std::iota(tile.begin(), tile.end(), 1);
  m.write_rows(1000, 5, 30, 4000, tile.data());
  std::vector<uint8_t> back(tile.size());
  m.read_rows(1000, 5, 30, 4000, back.data());
  EXPECT_EQ(tile, back);
  uint8_t gap;
  m.read(1030, &gap, 1);
  EXPECT_EQ(gap, 0);
  m.clear();
  EXPECT_EQ(m.pages(), 0u);
}

// A fill region whose byte at region offset x is (x * 7 + 3) mod 256.
SparseMemory::Fill pattern() {
  return [](uint64_t offset, uint8_t* dst, uint64_t n) {
    for (uint64_t k = 0; k < n; ++k) dst[k] = uint8_t((offset + k) * 7 + 3);
  };
}
uint8_t pattern_at(uint64_t offset) { return uint8_t(offset * 7 + 3); }

TEST(SparseMemory, FillRegionReadsItsValuesAndZeroAroundIt) {
  SparseMemory m;
  const uint64_t base = 5000, len = 10000;
  m.set_fill(base, len, pattern());
  std::vector<uint8_t> buf(len + 200, 0xAB);
  m.read(base - 100, buf.data(), buf.size());  // 100 bytes either side
  for (uint64_t k = 0; k < buf.size(); ++k) {
    const bool inside = k >= 100 && k < 100 + len;
    ASSERT_EQ(buf[k], inside ? pattern_at(k - 100) : 0) << "byte " << k;
  }
  EXPECT_EQ(m.pages(), 0u);  // reading allocates nothing
}

TEST(SparseMemory, WriteIntoAFillRegionKeepsTheRestOfItsPage) {
  SparseMemory m;
  m.set_fill(4096, 3 * 4096, pattern());
  const std::vector<uint8_t> src(10, 0xEE);
  m.write(4096 + 4090, src.data(), src.size());  // across the boundary of pages 1 and 2
  EXPECT_EQ(m.pages(), 2u);
  std::vector<uint8_t> buf(3 * 4096);
  m.read(4096, buf.data(), buf.size());
  for (uint64_t k = 0; k < buf.size(); ++k)
    ASSERT_EQ(buf[k], k >= 4090 && k < 4100 ? 0xEE : pattern_at(k)) << "byte " << k;
}

TEST(SparseMemory, FillRegionsSideBySideAndOverlapsRefused) {
  SparseMemory m;
  m.set_fill(0, 100, pattern());
  m.set_fill(100, 50, [](uint64_t, uint8_t* dst, uint64_t n) { std::fill(dst, dst + n, uint8_t(1)); });
  uint8_t buf[160];
  m.read(0, buf, sizeof buf);
  for (uint64_t k = 0; k < sizeof buf; ++k) ASSERT_EQ(buf[k], k < 100 ? pattern_at(k) : k < 150 ? 1 : 0);
  EXPECT_THROW(m.set_fill(50, 10, pattern()), std::invalid_argument);   // inside the first
  EXPECT_THROW(m.set_fill(140, 20, pattern()), std::invalid_argument);  // over the second's end
  m.clear();
  m.read(0, buf, sizeof buf);
  for (uint8_t b : buf) ASSERT_EQ(b, 0);
}

}  // namespace
}  // namespace stepsim
