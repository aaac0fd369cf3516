// A CSV cell: the text as is, or quoted (inner quotes doubled) where it holds a comma, quote or newline.
#pragma once
#include <string>

namespace locosim {

inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace locosim
