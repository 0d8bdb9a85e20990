#include "hw/memory/sparse_memory.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace stepsim {

void SparseMemory::set_fill(uint64_t base, uint64_t len, Fill fill) {
  if (len == 0) return;
  if (base + len < base) throw std::invalid_argument("fill region wraps around the address space");
  auto next = fills_.lower_bound(base);
  const bool overlaps_next = next != fills_.end() && next->first < base + len;
  const bool overlaps_prev = next != fills_.begin() && std::prev(next)->first + std::prev(next)->second.len > base;
  if (overlaps_next || overlaps_prev)
    throw std::invalid_argument("fill region at byte " + std::to_string(base) + " (" + std::to_string(len) +
                                " bytes) overlaps another");
  fills_.emplace(base, FillRegion{len, std::move(fill)});
}

void SparseMemory::initial_bytes(uint64_t addr, uint8_t* dst, uint64_t n) const {
  const uint64_t end = addr + n;
  // The first region that can reach addr: the last one starting at or before it.
  auto it = fills_.upper_bound(addr);
  if (it != fills_.begin()) --it;
  uint64_t at = addr;
  for (; it != fills_.end() && it->first < end; ++it) {
    const uint64_t from = std::max(at, it->first), to = std::min(end, it->first + it->second.len);
    if (from >= to) continue;
    std::memset(dst + (at - addr), 0, from - at);
    it->second.fill(from - it->first, dst + (from - addr), to - from);
    at = to;
  }
  std::memset(dst + (at - addr), 0, end - at);
}

void SparseMemory::read(uint64_t addr, uint8_t* dst, uint64_t len) const {
  while (len > 0) {
    const uint64_t off = addr % kPageBytes;
    const uint64_t n = std::min(len, kPageBytes - off);
    auto it = pages_.find(addr / kPageBytes);
    if (it != pages_.end())
      std::memcpy(dst, it->second->data() + off, n);
    else if (fills_.empty())
      std::memset(dst, 0, n);
    else
      initial_bytes(addr, dst, n);
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
      // Uninitialised (new Page, not make_unique's zeroing), then only what this write leaves
      // gets its initial bytes: a tensor written whole is not zeroed first.
      page.reset(new Page);
      const uint64_t page_base = addr - off;
      initial_bytes(page_base, page->data(), off);
      initial_bytes(addr + n, page->data() + off + n, kPageBytes - off - n);
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
