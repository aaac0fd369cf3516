// Wire formats: exact sizes and round-to-nearest-even conversions (LibTorch's own casts).
#include "algorithms/codec.hpp"

#include <stdexcept>

namespace locosim {

const std::vector<std::string>& wire_format_names() {
  static const std::vector<std::string> names = {"fp32", "fp16", "bf16"};
  return names;
}

WireFormat wire_format_from_name(const std::string& name) {
  if (name == "fp32") return WireFormat::fp32;
  if (name == "fp16") return WireFormat::fp16;
  if (name == "bf16") return WireFormat::bf16;
  throw std::invalid_argument("unknown wire format '" + name + "'");
}

std::string wire_format_name(WireFormat format) {
  switch (format) {
    case WireFormat::fp32: return "fp32";
    case WireFormat::fp16: return "fp16";
    case WireFormat::bf16: return "bf16";
  }
  return "?";
}

double wire_bytes(WireFormat format, int64_t numel) {
  switch (format) {
    case WireFormat::fp32: return 4.0 * numel;
    case WireFormat::fp16:
    case WireFormat::bf16: return 2.0 * numel;
  }
  return 0;
}

torch::Tensor through_wire(const torch::Tensor& x, WireFormat format) {
  switch (format) {
    case WireFormat::fp32: return x.to(torch::kFloat32).to(x.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
    case WireFormat::fp16: return x.to(torch::kFloat16).to(x.scalar_type());
    case WireFormat::bf16: return x.to(torch::kBFloat16).to(x.scalar_type());
  }
  return x.clone();
}

}  // namespace locosim
