#include <gtest/gtest.h>

#include <numeric>
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

}  // namespace
}  // namespace stepsim
