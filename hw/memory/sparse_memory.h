// Sparse byte-addressed backing store for the off-chip memory (functional data).
//
// 4 KiB pages allocated on first write, kept in an unordered_map. Bytes never written read
// as zero, or as a fill region computes them (set_fill), so a 64-bit address space costs only
// the pages a program writes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>

namespace stepsim {

class SparseMemory {
 public:
  static constexpr uint64_t kPageBytes = 4096;

  // fill(offset, dst, n) writes the n bytes at region base + offset to dst.
  using Fill = std::function<void(uint64_t offset, uint8_t* dst, uint64_t n)>;

  void read(uint64_t addr, uint8_t* dst, uint64_t len) const;
  void write(uint64_t addr, const uint8_t* src, uint64_t len);
  // Strided 2-D block: row r lives at addr + r*pitch; `packed` holds rows*row_bytes bytes.
  void read_rows(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t pitch, uint8_t* packed) const;
  void write_rows(uint64_t addr, uint64_t rows, uint64_t row_bytes, uint64_t pitch, const uint8_t* packed);

  // Bytes [base, base + len) that no write has reached read as `fill` computes them, not as
  // zero: a tensor's initial values made on demand (gigabytes of random weights then cost no
  // memory and no up-front pass). A write into the region first fills the rest of its page.
  // Throws std::invalid_argument if the region overlaps another.
  void set_fill(uint64_t base, uint64_t len, Fill fill);

  size_t pages() const { return pages_.size(); }
  uint64_t bytes_allocated() const { return pages_.size() * kPageBytes; }
  void clear() {  // forgets the pages and the fill regions
    pages_.clear();
    fills_.clear();
  }

 private:
  using Page = std::array<uint8_t, kPageBytes>;
  struct FillRegion {
    uint64_t len;
    Fill fill;
  };
  // The initial bytes [addr, addr + n): the fill regions' values, zero elsewhere.
  void initial_bytes(uint64_t addr, uint8_t* dst, uint64_t n) const;

  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;  // key = addr / kPageBytes
  std::map<uint64_t, FillRegion> fills_;                       // key = region base
};

}  // namespace stepsim
