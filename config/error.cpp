// ConfigError: formats "file:line:column: key: message".
#include "config/error.hpp"

#include <cstdio>

namespace locosim {
namespace {

std::string format(const std::string& file, int line, int column, const std::string& key,
                   const std::string& message) {
  std::string where = file;
  if (line > 0) where += ":" + std::to_string(line) + ":" + std::to_string(column);
  return where + ": " + (key.empty() ? "" : key + ": ") + message;
}

}  // namespace

ConfigError::ConfigError(std::string file, int line, int column, std::string key, const std::string& message)
    : std::runtime_error(format(file, line, column, key, message)),
      file_(std::move(file)),
      line_(line),
      column_(column),
      key_(std::move(key)) {}

int report_failure(const std::exception& e, const char* program) {
  if (dynamic_cast<const ConfigError*>(&e) || dynamic_cast<const std::invalid_argument*>(&e)) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitBadInput;
  }
  std::fprintf(stderr, "%s: %s\n", program, e.what());
  return 1;
}

}  // namespace locosim
