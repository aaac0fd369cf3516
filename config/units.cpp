// Unit-suffixed quantities: "100 Mbps", "20 ms", "989 TFLOPS", "4 GiB" → base units.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <regex>

#include "config/section.hpp"

namespace locosim {
namespace {

using UnitTable = std::vector<std::pair<std::string, double>>;  // suffix → factor to the base unit

const UnitTable& units_of(Quantity kind) {
  static const UnitTable bandwidth = {
      {"bps", 1},       {"kbps", 1e3},     {"Kbps", 1e3},     {"Mbps", 1e6},     {"Gbps", 1e9},
      {"Tbps", 1e12},   {"bit/s", 1},      {"kbit/s", 1e3},   {"Mbit/s", 1e6},   {"Gbit/s", 1e9},
      {"Bps", 8},       {"kBps", 8e3},     {"KBps", 8e3},     {"MBps", 8e6},     {"GBps", 8e9},
      {"TBps", 8e12},   {"B/s", 8},        {"kB/s", 8e3},     {"MB/s", 8e6},     {"GB/s", 8e9}};
  static const UnitTable duration = {{"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"ms", 1e-3},
                                     {"s", 1},     {"min", 60},  {"h", 3600}};
  static const UnitTable flops = {{"FLOPS", 1},     {"kFLOPS", 1e3},  {"MFLOPS", 1e6},  {"GFLOPS", 1e9},
                                  {"TFLOPS", 1e12}, {"PFLOPS", 1e15}, {"flops", 1},     {"Gflops", 1e9},
                                  {"Tflops", 1e12}, {"Pflops", 1e15}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}};
  static const UnitTable bytes = {{"B", 1},    {"kB", 1e3},   {"KB", 1e3},          {"MB", 1e6},
                                  {"GB", 1e9}, {"TB", 1e12},  {"KiB", 1024.0},      {"MiB", 1048576.0},
                                  {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  switch (kind) {
    case Quantity::bandwidth_bps: return bandwidth;
    case Quantity::duration_s: return duration;
    case Quantity::flops: return flops;
    case Quantity::bytes: return bytes;
  }
  return bytes;
}

const char* kind_name(Quantity kind) {
  switch (kind) {
    case Quantity::bandwidth_bps: return "a bandwidth such as '100 Mbps'";
    case Quantity::duration_s: return "a duration such as '20 ms'";
    case Quantity::flops: return "a compute speed such as '165 TFLOPS'";
    case Quantity::bytes: return "a size such as '4 GiB'";
  }
  return "a quantity";
}

}  // namespace

std::string quantity_units(Quantity kind) {
  std::string out;
  for (const auto& [suffix, factor] : units_of(kind)) out += (out.empty() ? "" : " ") + suffix;
  return out;
}

std::optional<double> parse_quantity(const std::string& text, Quantity kind, std::string* why) {
  static const std::regex form(R"(^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*(\S+)?\s*$)");
  auto explain = [&](const std::string& reason) -> std::optional<double> {
    if (why) *why = "expected " + std::string(kind_name(kind)) + " (units: " + quantity_units(kind) + "), " + reason;
    return std::nullopt;
  };
  std::smatch m;
  if (!std::regex_match(text, m, form)) return explain("got '" + text + "'");
  if (!m[2].matched) return explain("got '" + text + "' with no unit");
  for (const auto& [suffix, factor] : units_of(kind)) {
    if (m[2].str() == suffix) {
      // strtod, not std::stod: an overflow is a message naming the key, not an exception naming stod.
      const std::string number = m[1].str();
      errno = 0;
      const double mantissa = std::strtod(number.c_str(), nullptr);
      const bool overflow = errno == ERANGE && std::fabs(mantissa) > 1;
      const bool underflow = errno == ERANGE && std::fabs(mantissa) <= 1;
      const double value = mantissa * factor;
      if (overflow || !std::isfinite(value)) return explain("got '" + text + "', which is out of range (not finite)");
      // A subnormal value (or one that underflowed to 0) is no physical quantity, and it does not survive
      // a round trip through text: SimGrid's profile parser throws std::out_of_range on it.
      if (underflow || (value != 0 && std::fabs(value) < std::numeric_limits<double>::min())) {
        return explain("got '" + text + "', which is out of range (too close to 0 for a double)");
      }
      return value;
    }
  }
  return explain("got unit '" + m[2].str() + "' in '" + text + "'");
}

}  // namespace locosim
