// Sparse byte-addressed backing store for the off-chip memory (functional data).
//
// 4 KiB pages allocated on first write, kept in an unordered_map. Bytes never written read
// as zero, so a 64-bit address space costs only the pages a program touches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace stepsim {

class SparseMemory {
 public:
  static constexpr uint64_t kPageBytes = 4096;

  void read(uint64_t addr, uint8_t* dst, uint64_t len) const;
  void write(uint64_t addr, const uint8_t* src, uint64_t len);
  // Strided 2-D block: row r lives at addr + r*pitch; `packed` holds rows*row_bytes bytes.
  void read_rows(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t pitch, uint8_t* packed) const;
  void write_rows(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t pitch, const uint8_t* packed);

  size_t pages() const { return pages_.size(); }
  uint64_t bytes_allocated() const { return pages_.size() * kPageBytes; }
  void clear() { pages_.clear(); }

 private:
  using Page = std::array<uint8_t, kPageBytes>;
  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;  // key = addr / kPageBytes
};

}  // namespace stepsim
