// The one error type for bad input: it names the file, line, column and dotted key, and the constraint.
// The CLI turns it into a message on stderr and exit code 2.
#pragma once
#include <stdexcept>
#include <string>

namespace locosim {

class ConfigError : public std::runtime_error {
 public:
  // line and column are 1-based; 0 when the problem has no position (a missing file).
  ConfigError(std::string file, int line, int column, std::string key, const std::string& message);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& key() const { return key_; }

 private:
  std::string file_;
  int line_;
  int column_;
  std::string key_;
};

// Exit code for bad input (a ConfigError or std::invalid_argument at the boundary).
constexpr int kExitBadInput = 2;

// How both command-line tools end on an exception: bad input prints "error: ..." and returns 2;
// anything else prints "<program>: ..." and returns 1.
int report_failure(const std::exception& e, const char* program);

}  // namespace locosim
