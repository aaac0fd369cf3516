// Section's typed values: integers, numbers, flags, strings, choices, identifiers, lists of numbers,
// quantities with units and paths (see section.hpp). Each is checked, then written to the resolved tree.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "config/nearest.hpp"
#include "config/section_impl.hpp"

namespace locosim {

using namespace section_detail;

namespace {

// "in [0, 9223372036854775807]": `range` as whole numbers, its open or infinite ends replaced by the
// nearest integers a 64-bit value can hold.
std::string integer_bounds(const Range& range) {
  constexpr double kMin = -9223372036854775808.0, kMax = 9223372036854775807.0;
  const double lo = range.lo_open ? std::floor(range.lo) + 1 : std::ceil(range.lo);
  const double hi = range.hi_open ? std::ceil(range.hi) - 1 : std::floor(range.hi);
  const auto bound = [&](double v, bool upper) {
    if (upper ? !(v < kMax) : !(v > kMin)) {
      return std::to_string(upper ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min());
    }
    return std::to_string(static_cast<int64_t>(v));
  };
  return "in [" + bound(lo, false) + ", " + bound(hi, true) + "]";
}

}  // namespace

namespace section_detail {

std::optional<uint64_t> parse_unsigned(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return v;
}

}  // namespace section_detail

int64_t Section::integer(const std::string& key, std::optional<int64_t> fallback, Range range) {
  YAML::Node n = lookup(*impl_, key);
  int64_t value;
  if (!n.IsDefined() || n.IsNull()) {
    if (!fallback) fail(key, "is required (an integer " + range.describe() + ")");
    value = *fallback;
  } else {
    const std::string& text = require_scalar(*impl_, key, n, "an integer").Scalar();
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0') fail_at(*impl_, n.Mark(), key, "must be an integer, got '" + text + "'");
    // Past 64 bits: the bounds in full, so that a huge value is not told it "must be >= 0".
    if (errno == ERANGE) fail_at(*impl_, n.Mark(), key, "must be an integer " + integer_bounds(range) + ", got '" + text + "'");
    value = v;
    if (!range.contains(static_cast<double>(value))) {
      fail_at(*impl_, n.Mark(), key, "must be " + range.describe() + ", got " + text);
    }
  }
  impl_->resolved[key] = value;
  return value;
}

uint64_t Section::unsigned_integer(const std::string& key, std::optional<uint64_t> fallback) {
  YAML::Node n = lookup(*impl_, key);
  uint64_t value;
  if (!n.IsDefined() || n.IsNull()) {
    if (!fallback) fail(key, "is required (an integer in [0, 18446744073709551615])");
    value = *fallback;
  } else {
    const std::string& text = require_scalar(*impl_, key, n, "an integer").Scalar();
    std::optional<uint64_t> parsed = parse_unsigned(text);
    if (!parsed) fail_at(*impl_, n.Mark(), key, "must be an integer in [0, 18446744073709551615], got '" + text + "'");
    value = *parsed;
  }
  impl_->resolved[key] = value;
  return value;
}

double Section::number(const std::string& key, std::optional<double> fallback, Range range) {
  YAML::Node n = lookup(*impl_, key);
  double value;
  if (!n.IsDefined() || n.IsNull()) {
    if (!fallback) fail(key, "is required (a number " + range.describe() + ")");
    value = *fallback;
  } else {
    const std::string& text = require_scalar(*impl_, key, n, "a number").Scalar();
    char* end = nullptr;
    value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(value)) {
      fail_at(*impl_, n.Mark(), key, "must be a number, got '" + text + "'");
    }
    if (!range.contains(value)) fail_at(*impl_, n.Mark(), key, "must be " + range.describe() + ", got " + text);
  }
  impl_->resolved[key] = value;
  return value;
}

bool Section::flag(const std::string& key, std::optional<bool> fallback) {
  YAML::Node n = lookup(*impl_, key);
  bool value;
  if (!n.IsDefined() || n.IsNull()) {
    if (!fallback) fail(key, "is required (true or false)");
    value = *fallback;
  } else {
    const std::string& text = require_scalar(*impl_, key, n, "true or false").Scalar();
    if (text == "true") {
      value = true;
    } else if (text == "false") {
      value = false;
    } else {
      fail_at(*impl_, n.Mark(), key, "must be true or false, got '" + text + "'");
    }
  }
  impl_->resolved[key] = value;
  return value;
}

std::string Section::text(const std::string& key, std::optional<std::string> fallback) {
  YAML::Node n = lookup(*impl_, key);
  std::string value;
  if (!n.IsDefined() || n.IsNull()) {
    if (!fallback) fail(key, "is required (a string)");
    value = *fallback;
  } else {
    value = require_scalar(*impl_, key, n, "a string").Scalar();
  }
  impl_->resolved[key] = value;
  return value;
}

std::string Section::choice(const std::string& key, const std::vector<std::string>& allowed,
                            std::optional<std::string> fallback) {
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  YAML::Node n = lookup(*impl_, key);
  if ((!n.IsDefined() || n.IsNull()) && !fallback) fail(key, "is required (one of: " + list + ")");
  std::string value = text(key, fallback);
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    const std::string closest = nearest_name(value, allowed);
    fail(key, "must be one of: " + list + "; got '" + value + "'" +
                  (closest.empty() ? "" : "; did you mean '" + closest + "'?"));
  }
  return value;
}

std::string Section::identifier(const std::string& key, std::optional<std::string> fallback) {
  const bool given = has(key);
  std::string value = text(key, fallback);
  if (!is_identifier(value)) {
    fail(key, "must be an identifier (a letter or digit, then letters, digits, '.', '_' or '-'; at most 64 "
              "characters): it names a folder; got '" + value + "'" + (given ? "" : " (the default: set " + key + ")"));
  }
  return value;
}

std::vector<double> Section::numbers(const std::string& key, size_t count, std::optional<std::vector<double>> fallback,
                                     Range range) {
  YAML::Node n = lookup(*impl_, key);
  std::vector<double> values;
  std::string shape = "a list of " + std::to_string(count) + " numbers " + range.describe();
  if (!n.IsDefined() || n.IsNull()) {
    if (!fallback) fail(key, "is required (" + shape + ")");
    values = *fallback;
  } else {
    if (!n.IsSequence() || n.size() != count) fail_at(*impl_, n.Mark(), key, "must be " + shape + ", got " + describe_node(n));
    for (size_t i = 0; i < count; ++i) {
      YAML::Node item = n[i];
      std::string text = item.IsScalar() ? item.Scalar() : "";
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(v) || !range.contains(v)) {
        fail_at(*impl_, item.Mark(), key + "[" + std::to_string(i) + "]",
                "must be a number " + range.describe() + ", got " + describe_node(item));
      }
      values.push_back(v);
    }
  }
  YAML::Node out(YAML::NodeType::Sequence);
  for (double v : values) out.push_back(v);
  out.SetStyle(YAML::EmitterStyle::Flow);
  impl_->resolved[key] = out;
  return values;
}

std::vector<uint64_t> Section::unsigned_integers(const std::string& key, size_t max_count) {
  YAML::Node n = lookup(*impl_, key);
  const std::string shape = "a list of 1 to " + std::to_string(max_count) + " different integers in [0, 18446744073709551615]";
  if (!n.IsDefined() || n.IsNull()) fail(key, "is required (" + shape + ")");
  if (!n.IsSequence() || n.size() == 0 || n.size() > max_count) {
    fail_at(*impl_, n.Mark(), key, "must be " + shape + ", got " + describe_node(n));
  }
  std::vector<uint64_t> values;
  YAML::Node out(YAML::NodeType::Sequence);
  for (size_t i = 0; i < n.size(); ++i) {
    YAML::Node item = n[i];
    const std::optional<uint64_t> v = item.IsScalar() ? parse_unsigned(item.Scalar()) : std::nullopt;
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (!v) fail_at(*impl_, item.Mark(), at, "must be an integer in [0, 18446744073709551615], got " + describe_node(item));
    if (std::find(values.begin(), values.end(), *v) != values.end()) {
      fail_at(*impl_, item.Mark(), at, "value " + item.Scalar() + " is listed twice");
    }
    values.push_back(*v);
    out.push_back(*v);
  }
  out.SetStyle(YAML::EmitterStyle::Flow);
  impl_->resolved[key] = out;
  return values;
}

double Section::quantity(const std::string& key, Quantity kind, std::optional<std::string> fallback, Range range) {
  YAML::Node n = lookup(*impl_, key);
  std::string text;
  if (!n.IsDefined() || n.IsNull()) {
    if (!fallback) fail(key, "is required (" + quantity_units(kind) + ")");
    text = *fallback;
  } else {
    text = require_scalar(*impl_, key, n, "a quantity with a unit").Scalar();
  }
  std::string why;
  std::optional<double> value = parse_quantity(text, kind, &why);
  if (!value) fail(key, why);
  if (!range.contains(*value)) {
    static const char* const kBaseUnit[] = {"bit/s", "s", "FLOP/s", "bytes"};  // by Quantity
    fail(key, "must be " + range.describe() + " " + kBaseUnit[static_cast<int>(kind)] + ", got '" + text + "'");
  }
  impl_->resolved[key] = text;
  return *value;
}

std::string Section::file_path(const std::string& key, std::optional<std::string> fallback) {
  std::string value = text(key, fallback);
  if (value.empty()) fail(key, "must be a path, got an empty string");
  std::filesystem::path p(value);
  if (p.is_relative()) p = std::filesystem::path(impl_->file).parent_path() / p;
  return p.lexically_normal().string();
}

}  // namespace locosim
