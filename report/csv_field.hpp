// CSV cells shared by the summary files (seeds.csv, tuned.csv, a sweep's summary.csv).
#pragma once
#include <string>

namespace locosim {

// A number to 9 significant digits; nan (no value) as an empty cell.
std::string csv_number(double v);

// The text as is, or quoted (inner quotes doubled) where it holds a comma, quote or newline.
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace locosim
