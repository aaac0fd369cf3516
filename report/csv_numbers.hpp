// Numbers as the run folder's CSV files print them: exactly what printf's %.9g and %.6f print, through
// std::to_chars (no locale, no format parsing: at thousands of workers printf took a tenth of a run).
#pragma once
#include <charconv>
#include <string>

namespace locosim {

inline std::string g9(double v) {  // %.9g: times, bytes, rates
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 9).ptr);
}

inline std::string fixed6(double v) {  // %.6f: losses, utilizations
  char buf[512];  // 1e300 in fixed notation
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 6).ptr);
}

}  // namespace locosim
