// The wire formats' names (wire_format.hpp).
#include "algorithms/wire_format.hpp"

#include <stdexcept>

namespace locosim {

const std::vector<std::string>& wire_format_names() {
  static const std::vector<std::string> names = {"fp32", "fp16", "bf16", "int8", "int4", "e3m0"};
  return names;
}

WireFormat wire_format_from_name(const std::string& name) {
  if (name == "fp32") return WireFormat::fp32;
  if (name == "fp16") return WireFormat::fp16;
  if (name == "bf16") return WireFormat::bf16;
  if (name == "int8") return WireFormat::int8;
  if (name == "int4") return WireFormat::int4;
  if (name == "e3m0") return WireFormat::e3m0;
  throw std::invalid_argument("unknown wire format '" + name + "'");
}

std::string wire_format_name(WireFormat format) {
  switch (format) {
    case WireFormat::fp32: return "fp32";
    case WireFormat::fp16: return "fp16";
    case WireFormat::bf16: return "bf16";
    case WireFormat::int8: return "int8";
    case WireFormat::int4: return "int4";
    case WireFormat::e3m0: return "e3m0";
  }
  return "?";
}

}  // namespace locosim
