#include "hw/memory/sparse_memory.h"

#include <algorithm>
#include <cstring>

namespace stepsim {

void SparseMemory::read(uint64_t addr, uint8_t* dst, uint64_t len) const {
  while (len > 0) {
    const uint64_t off = addr % kPageBytes;
    const uint64_t n = std::min(len, kPageBytes - off);
    auto it = pages_.find(addr / kPageBytes);
    if (it == pages_.end())
      std::memset(dst, 0, n);
    else
      std::memcpy(dst, it->second->data() + off, n);
    addr += n;
    dst += n;
    len -= n;
  }
}

void SparseMemory::write(uint64_t addr, const uint8_t* src, uint64_t len) {
  while (len > 0) {
    const uint64_t off = addr % kPageBytes;
    const uint64_t n = std::min(len, kPageBytes - off);
    auto& page = pages_[addr / kPageBytes];
    if (!page) {
      // Uninitialised (new Page, not make_unique's zeroing), then zero only what this write
      // leaves: a tensor written whole is not zeroed first.
      page.reset(new Page);
      std::memset(page->data(), 0, off);
      std::memset(page->data() + off + n, 0, kPageBytes - off - n);
    }
    std::memcpy(page->data() + off, src, n);
    addr += n;
    src += n;
    len -= n;
  }
}

void SparseMemory::read_rows(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t pitch, uint8_t* packed) const {
  for (uint64_t r = 0; r < rows; ++r) read(addr + r * pitch, packed + r * row_bytes, row_bytes);
}

void SparseMemory::write_rows(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t pitch, const uint8_t* packed) {
  for (uint64_t r = 0; r < rows; ++r) write(addr + r * pitch, packed + r * row_bytes, row_bytes);
}

}  // namespace stepsim
