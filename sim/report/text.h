// How the report's summary writes sizes and shares (one format for every line).
#pragma once

#include <cstdint>
#include <string>

namespace stepsim {

// "1.23 MiB (1289748 B)"; plain bytes below 1 KiB.
std::string bytes_text(uint64_t b);
// "12.3 %" of a fraction.
std::string percent_text(double fraction);

}  // namespace stepsim
