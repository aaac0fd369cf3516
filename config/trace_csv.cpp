#include "config/trace_csv.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace locosim {
namespace {

// Text from a file, for a message: control bytes (a NUL above all) as \xNN, at most 80 bytes.
std::string printable(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < 80; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += text[i];
    }
  }
  return out;
}

// One number of a row: the whole field is a decimal number (strtod would also take hex, inf and nan,
// or stop at a space or a NUL byte) and a double that is 0 or normal. "" if so, else why not.
std::string parse_field(const std::string& text, double* out) {
  const bool decimal = !text.empty() && text.find_first_not_of("0123456789+-.eE") == std::string::npos;
  char* end = nullptr;
  errno = 0;
  *out = decimal ? std::strtod(text.c_str(), &end) : 0;
  if (!decimal || end != text.c_str() + text.size()) return "'" + printable(text) + "' is not a decimal number";
  if (errno == ERANGE || !std::isfinite(*out) || std::fpclassify(*out) == FP_SUBNORMAL) {
    return "'" + printable(text) + "' is out of range for a double";
  }
  return "";
}

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

void read_trace_csv(Section& s, const std::string& key, const std::string& path, uintmax_t max_bytes,
                    const std::function<void(const TraceRow&)>& row) {
  const std::string problem = regular_file_problem(path, max_bytes);
  if (!problem.empty()) s.fail(key, "trace file '" + path + "' " + problem + "; a trace is a CSV text file");
  std::ifstream in(path);
  if (!in) s.fail(key, "trace file '" + path + "' cannot be read (check its permissions)");
  std::string line;
  TraceRow r;
  bool seen_content = false;
  while (std::getline(in, line)) {
    ++r.line;
    line = trimmed(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    r.at = "trace '" + path + "' line " + std::to_string(r.line) + ": ";
    const bool header = !seen_content && std::isalpha(static_cast<unsigned char>(line[0]));
    seen_content = true;
    if (header) continue;
    const size_t comma = line.find(',');
    r.value_text = comma == std::string::npos ? "" : trimmed(line.substr(comma + 1));
    const std::string expected = r.at + "expected a row 'time_s,value' of two numbers, got '" + printable(line) + "'";
    if (comma == std::string::npos || r.value_text.find(',') != std::string::npos) s.fail(key, expected);
    std::string why = parse_field(trimmed(line.substr(0, comma)), &r.time_s);
    if (why.empty()) why = parse_field(r.value_text, &r.value);
    if (!why.empty()) s.fail(key, expected + ": " + why);
    row(r);
  }
}

}  // namespace locosim
