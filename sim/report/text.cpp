// The summary's formats (sim/report/text.h).
#include "sim/report/text.h"

#include <iomanip>
#include <sstream>

namespace stepsim {

// "1.23 MiB (1289748 B)"; plain bytes below 1 KiB.
std::string bytes_text(uint64_t b) {
  std::ostringstream s;
  if (b < 1024) {
    s << b << " B";
    return s.str();
  }
  const char* unit = b >= (uint64_t(1) << 30) ? "GiB" : b >= (uint64_t(1) << 20) ? "MiB" : "KiB";
  const double div = b >= (uint64_t(1) << 30)   ? double(uint64_t(1) << 30)
                     : b >= (uint64_t(1) << 20) ? 1048576.0
                                                : 1024.0;
  s << std::fixed << std::setprecision(2) << double(b) / div << " " << unit << " (" << b << " B)";
  return s.str();
}

std::string percent_text(double fraction) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << 100.0 * fraction << " %";
  return s.str();
}

}  // namespace stepsim
