// Integers written as text (token streams, parameters, presets, graph fields): one parser, so a
// number is read the same way everywhere and never cut to 32 bits or read as octal.
#pragma once

#include <cstdint>
#include <string>

namespace stepsim {

// A whole decimal (or 0x hexadecimal) 64-bit integer with an optional sign. False for anything
// else: empty text, trailing characters, or a number outside int64_t.
bool parse_int64(const std::string& text, int64_t& out);

// Allowed values of an integer (a parameter, every entry of an integer list, a graph field),
// inclusive.
struct IntRange {
  int64_t min, max;
  bool contains(int64_t v) const { return v >= min && v <= max; }
  std::string text() const;  // "0..15"
};

}  // namespace stepsim
