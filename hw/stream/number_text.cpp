#include "hw/stream/number_text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace stepsim {

std::string IntRange::text() const { return std::to_string(min) + ".." + std::to_string(max); }

bool parse_finite_double(const std::string& text, double& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(v)) return false;
  out = v;
  return true;
}

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

namespace {

// Expressions (hw/stream/number_text.h): GiNaC computes numbers exactly and at once, so "2^8000000000" or "1e999999999"
// would be worked out (minutes, gigabytes) before anything could look at the result. A written expression is therefore
// held to what shapes need, checked on the text before GiNaC reads it: whole decimal numbers within 64 bits, exponents
// written as a number 0..kMaxExponent, at most kMaxPowers powers (so (n^64)^64 with n < 2^63 is the largest value: 32
// KiB) and kMaxExpressionChars.
constexpr size_t kMaxExpressionChars = 1000;
constexpr int64_t kMaxExponent = 64;
constexpr int kMaxPowers = 2;

bool is_id_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_id_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }

// The number that starts at text[i] (digits only), checked to be a whole 64-bit number; i moves
// past it.
int64_t read_number(const std::string& text, size_t& i) {
  const size_t start = i;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i < text.size() && (is_id_char(text[i]) || text[i] == '.'))
    refuse_expression(text, "numbers are whole decimal numbers (no '.', exponent or suffix): '" +
                                text.substr(start, i + 1 - start) + "'");
  int64_t v = 0;
  if (!parse_int64(text.substr(start, i - start), v))
    refuse_expression(text, "number " + text.substr(start, std::min<size_t>(i - start, 40)) +
                                " is out of range (a 64-bit integer: at most 9223372036854775807)");
  return v;
}

}  // namespace

[[noreturn]] void refuse_expression(const std::string& text, const std::string& why) {
  const std::string shown = text.size() > 60 ? text.substr(0, 60) + "..." : text;
  throw std::invalid_argument("cannot parse expression '" + shown + "': " + why);
}

void check_expression_text(const std::string& text) {
  if (text.size() > kMaxExpressionChars)
    refuse_expression(
        text, std::to_string(text.size()) + " characters (at most " + std::to_string(kMaxExpressionChars) + ")");
  int powers = 0;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (is_id_start(c)) {
      while (i < text.size() && is_id_char(text[i])) ++i;
    } else if (is_digit(c)) {
      read_number(text, i);
    } else if (c == '.') {
      refuse_expression(text, "numbers are whole decimal numbers (no '.')");
    } else if (c == '^') {
      if (++powers > kMaxPowers) refuse_expression(text, "at most " + std::to_string(kMaxPowers) + " powers ('^')");
      ++i;
      while (i < text.size() && text[i] == ' ') ++i;
      if (i == text.size() || !is_digit(text[i]) || read_number(text, i) > kMaxExponent)
        refuse_expression(text,
                          "an exponent must be a number 0.." + std::to_string(kMaxExponent) + " written after '^'");
    } else {
      ++i;
    }
  }
}

}  // namespace stepsim
