// Section's insides, shared by the files that implement it: section.cpp (loading, overrides, grids,
// the structure of the tree) and section_values.cpp (the typed values). Not for other users of Section.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "config/section.hpp"

namespace locosim {

struct Section::Impl {
  std::string file;
  std::string path;             // dotted key of this section
  YAML::Node node;              // the mapping; Null for an absent optional section
  YAML::Mark mark;              // where the section starts (for errors about missing keys)
  YAML::Node resolved;          // this section's part of the resolved tree
  std::set<std::string> asked;  // every key a getter asked for, present or not
  std::set<std::string> mentioned;  // keys has() asked about: known here (in messages), not read
  // (dotted path, option) of each value the command line put in the tree (apply_overrides), shared by
  // every section of the tree: an error at one of them names the option.
  std::shared_ptr<std::vector<std::pair<std::string, std::string>>> overridden =
      std::make_shared<std::vector<std::pair<std::string, std::string>>>();
};

namespace section_detail {

// 'text', "a list", "a mapping" or "nothing": what a node is, for messages.
std::string describe_node(const YAML::Node& n);
// The error about `key` in `s` at `mark`: its file, line and column, or the --set option that put the
// value there.
ConfigError error_at(const Section::Impl& s, const YAML::Mark& mark, const std::string& key, const std::string& message);
[[noreturn]] void fail_at(const Section::Impl& s, const YAML::Mark& mark, const std::string& key,
                          const std::string& message);
// The value at `key`, or an undefined node (nothing is inserted); notes that `key` was asked for.
YAML::Node lookup(Section::Impl& s, const std::string& key);
// `n` if it is a scalar; otherwise fails, saying it must be `what`.
YAML::Node require_scalar(Section::Impl& s, const std::string& key, const YAML::Node& n, const char* what);
// Digits only (no sign, no blanks), at most 2^64 - 1.
std::optional<uint64_t> parse_unsigned(const std::string& text);

}  // namespace section_detail
}  // namespace locosim
