// A world trace's file (config/world.hpp, `world.traces`): rows `time_s,value` of a CSV text file,
// read strictly. '#' starts a comment; blank lines are skipped; a first row that starts with a letter
// is a header. Each field is a whole decimal number ("12", "-0.5", "3e-2"; no hex, inf, nan, space
// or NUL byte) whose double is 0 or normal. What the numbers may be is the caller's rule.
//
//   read_trace_csv(s, "bandwidth", path, [&](const TraceRow& row) { ... s.fail("bandwidth", row.at + ...); });
#pragma once

#include <functional>
#include <string>

#include "config/section.hpp"

namespace locosim {

struct TraceRow {
  std::string at;          // "trace 'path' line 7: ", to start a message about the row
  size_t line = 0;         // its line in the file
  double time_s = 0;
  double value = 0;
  std::string value_text;  // as written, for messages
};

// Reads `path` (a regular file of at most `max_bytes`) and hands each row to `row`, in file order.
// Errors (the file, a row that is not two numbers) are reported at `key` of `s`, naming the line.
void read_trace_csv(Section& s, const std::string& key, const std::string& path, uintmax_t max_bytes,
                    const std::function<void(const TraceRow&)>& row);

}  // namespace locosim
