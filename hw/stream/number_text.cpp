#include "hw/stream/number_text.h"

#include <charconv>

namespace stepsim {

std::string IntRange::text() const { return std::to_string(min) + ".." + std::to_string(max); }

bool parse_int64(const std::string& text, int64_t& out) {
  const char* p = text.data();
  const char* end = p + text.size();
  bool negative = false;
  if (p != end && (*p == '-' || *p == '+')) negative = *p++ == '-';
  int base = 10;
  if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p += 2;
  }
  if (p == end || *p == '-' || *p == '+') return false;
  uint64_t magnitude = 0;
  auto [stop, ec] = std::from_chars(p, end, magnitude, base);
  if (ec != std::errc() || stop != end) return false;
  const uint64_t limit = negative ? uint64_t(INT64_MAX) + 1 : uint64_t(INT64_MAX);
  if (magnitude > limit) return false;
  out = negative ? int64_t(0 - magnitude) : int64_t(magnitude);
  return true;
}

}  // namespace stepsim
