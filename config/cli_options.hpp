// Checks of the two command lines' options, worded as a file's values are: included by the mains only
// (they link CLI11; nothing else here does).
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "config/section.hpp"

namespace locosim {

// An integer option in [lo, hi], refused as "must be an integer in [lo, hi], got '0'" (CLI11's own
// range checks print their bounds as doubles, 150 digits long).
inline CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return CLI::Validator([lo, hi](std::string& text) { return integer_option_problem(text, lo, hi); },
                        "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

}  // namespace locosim
