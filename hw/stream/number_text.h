// Integers written as text (token streams, parameters, presets, graph fields): one parser, so a
// number is read the same way everywhere and never cut to 32 bits or read as octal.
#pragma once

#include <cstdint>
#include <string>

namespace stepsim {

// A whole decimal (or 0x hexadecimal) 64-bit integer with an optional sign. False for anything
// else: empty text, trailing characters, or a number outside int64_t.
bool parse_int64(const std::string& text, int64_t& out);

// A finite decimal number ("1e-3", "0.5", "-2"): false for empty text, trailing characters, nan,
// inf or a value outside double's range.
bool parse_finite_double(const std::string& text, double& out);

// Allowed values of an integer (a parameter, every entry of an integer list, a graph field),
// inclusive.
struct IntRange {
  int64_t min, max;
  bool contains(int64_t v) const { return v >= min && v <= max; }
  std::string text() const;  // "0..15"
};

// A symbolic expression as users write it (`symbols:` values, `dims:` sizes, --sym, set_dim),
// checked on the text before GiNaC reads it (sim/shape/infer.h, SymbolTable::parse): at most
// 1000 characters, whole decimal numbers within 64 bits (no '.', exponent or suffix), and at most
// 2 powers, each exponent a number 0..64. Throws std::invalid_argument ("cannot parse expression
// 'TEXT': WHY") otherwise.
void check_expression_text(const std::string& text);
[[noreturn]] void refuse_expression(const std::string& text, const std::string& why);

}  // namespace stepsim
