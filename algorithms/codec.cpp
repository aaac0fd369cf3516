// Wire formats: exact sizes, round-to-nearest-even casts (LibTorch's own) and block-wise
// absmax quantization with real packing, so the bytes counted are the bytes produced.
#include "algorithms/codec.hpp"

#include <cstring>
#include <stdexcept>

namespace locosim {
namespace {

int64_t blocks_of(int64_t numel) { return (numel + kQuantBlock - 1) / kQuantBlock; }

int64_t q_max(WireFormat format) { return format == WireFormat::int8 ? 127 : 7; }

// Bytes of the packed values alone (the scales follow them).
int64_t value_bytes(WireFormat format, int64_t numel) {
  return format == WireFormat::int8 ? numel : (numel + 1) / 2;
}

}  // namespace

const std::vector<std::string>& wire_format_names() {
  static const std::vector<std::string> names = {"fp32", "fp16", "bf16", "int8", "int4"};
  return names;
}

WireFormat wire_format_from_name(const std::string& name) {
  if (name == "fp32") return WireFormat::fp32;
  if (name == "fp16") return WireFormat::fp16;
  if (name == "bf16") return WireFormat::bf16;
  if (name == "int8") return WireFormat::int8;
  if (name == "int4") return WireFormat::int4;
  throw std::invalid_argument("unknown wire format '" + name + "'");
}

std::string wire_format_name(WireFormat format) {
  switch (format) {
    case WireFormat::fp32: return "fp32";
    case WireFormat::fp16: return "fp16";
    case WireFormat::bf16: return "bf16";
    case WireFormat::int8: return "int8";
    case WireFormat::int4: return "int4";
  }
  return "?";
}

double wire_bytes(WireFormat format, int64_t numel) {
  switch (format) {
    case WireFormat::fp32: return 4.0 * numel;
    case WireFormat::fp16:
    case WireFormat::bf16: return 2.0 * numel;
    case WireFormat::int8:
    case WireFormat::int4: return static_cast<double>(value_bytes(format, numel) + 4 * blocks_of(numel));
  }
  return 0;
}

torch::Tensor encode_quantized(const torch::Tensor& x, WireFormat format) {
  if (format != WireFormat::int8 && format != WireFormat::int4) {
    throw std::invalid_argument("encode_quantized: " + wire_format_name(format) + " is not a quantized format");
  }
  const int64_t n = x.numel(), blocks = blocks_of(n), qmax = q_max(format);
  if (n == 0) return torch::empty({0}, torch::kUInt8);
  torch::Tensor v_NB = torch::zeros({blocks * kQuantBlock}, torch::kFloat32);  // zero-padded to whole blocks
  v_NB.slice(0, 0, n).copy_(x.detach().reshape({-1}));
  v_NB = v_NB.view({blocks, kQuantBlock});
  torch::Tensor scale_N1 = v_NB.abs().amax(1, /*keepdim=*/true).div_(static_cast<double>(qmax));
  torch::Tensor safe_N1 = torch::where(scale_N1 > 0, scale_N1, torch::ones_like(scale_N1));  // all-zero block
  torch::Tensor q = v_NB.div(safe_N1).round_().clamp_(-qmax, qmax).reshape({-1}).slice(0, 0, n);

  torch::Tensor out = torch::empty({value_bytes(format, n) + 4 * blocks}, torch::kUInt8);
  if (format == WireFormat::int8) {
    out.slice(0, 0, n).copy_(q.to(torch::kInt8).view(torch::kUInt8));
  } else {
    // Two's-complement-free nibbles: q + 8 in [1, 15]; element 2j in the low nibble, 2j+1 in the high.
    torch::Tensor nib = torch::zeros({2 * value_bytes(format, n)}, torch::kUInt8);
    nib.slice(0, 0, n).copy_((q + 8).to(torch::kUInt8));
    nib = nib.view({-1, 2});
    out.slice(0, 0, value_bytes(format, n)).copy_(nib.select(1, 0).bitwise_or(nib.select(1, 1).mul(16)));
  }
  torch::Tensor scales = scale_N1.reshape({-1}).contiguous();
  std::memcpy(out.data_ptr<uint8_t>() + value_bytes(format, n), scales.data_ptr<float>(), 4 * blocks);
  return out;
}

torch::Tensor decode_quantized(const torch::Tensor& bytes, WireFormat format, int64_t numel) {
  const int64_t blocks = blocks_of(numel), vbytes = value_bytes(format, numel);
  if (bytes.numel() != vbytes + 4 * blocks) throw std::invalid_argument("decode_quantized: wrong byte count");
  if (numel == 0) return torch::empty({0}, torch::kFloat32);
  const torch::Tensor b = bytes.contiguous();
  torch::Tensor payload = b.slice(0, 0, vbytes);
  torch::Tensor q;
  if (format == WireFormat::int8) {
    q = payload.view(torch::kInt8).to(torch::kFloat32);
  } else {
    torch::Tensor lo = payload.bitwise_and(15), hi = payload.div(16, "floor");
    q = torch::stack({lo, hi}, 1).reshape({-1}).slice(0, 0, numel).to(torch::kFloat32).sub_(8);
  }
  torch::Tensor scales = torch::empty({blocks, 1}, torch::kFloat32);
  std::memcpy(scales.data_ptr<float>(), b.data_ptr<uint8_t>() + vbytes, 4 * blocks);
  torch::Tensor v_NB = torch::zeros({blocks * kQuantBlock}, torch::kFloat32);
  v_NB.slice(0, 0, numel).copy_(q);
  return v_NB.view({blocks, kQuantBlock}).mul_(scales).reshape({-1}).slice(0, 0, numel).clone();
}

torch::Tensor through_wire(const torch::Tensor& x, WireFormat format) {
  switch (format) {
    case WireFormat::fp32: return x.to(torch::kFloat32).to(x.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
    case WireFormat::fp16: return x.to(torch::kFloat16).to(x.scalar_type());
    case WireFormat::bf16: return x.to(torch::kBFloat16).to(x.scalar_type());
    case WireFormat::int8:
    case WireFormat::int4:
      return decode_quantized(encode_quantized(x, format), format, x.numel()).view(x.sizes()).to(x.scalar_type());
  }
  return x.clone();
}

}  // namespace locosim
