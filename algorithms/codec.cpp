// Wire formats: exact sizes, round-to-nearest-even casts (LibTorch's own), block-wise absmax
// quantization (int8/int4) and the block-scaled 4-bit float e3m0, with real packing, so the bytes
// counted are the bytes produced.
#include "algorithms/codec.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace locosim {
namespace {

int64_t blocks_of(int64_t numel) { return (numel + kQuantBlock - 1) / kQuantBlock; }

bool quantized(WireFormat format) {
  return format == WireFormat::int8 || format == WireFormat::int4 || format == WireFormat::e3m0;
}

int64_t q_max(WireFormat format) { return format == WireFormat::int8 ? 127 : 7; }  // int8, int4

// Bytes of the packed values alone (the scales follow them).
int64_t value_bytes(WireFormat format, int64_t numel) {
  return format == WireFormat::int8 ? numel : (numel + 1) / 2;
}

// e3m0 magnitudes by exponent field: 0, then 2^-6 .. 2^0 (exact in fp32).
torch::Tensor e3m0_magnitudes() {
  std::vector<float> m = {0.0f};
  for (int e = 1; e <= 7; ++e) m.push_back(std::ldexp(1.0f, e - 7));
  return torch::tensor(m, torch::kFloat32);
}

// The e3m0 codes (sign·8 + exponent field, kUInt8) of r = x/s for fp32 x of one block row each
// and s = the block's absmax (all-zero blocks: s = 1). |r| <= 1. Nearest of {0, 2^-6 .. 2^0},
// ties to the larger magnitude: with |r| = 2^E·(1 + f), f in [0, 1), the nearer power is 2^E when
// f < 1/2 and 2^(E+1) from f = 1/2 (f's top bit), read exactly from the fp32 bits; below 2^-7 the
// nearer is 0.
torch::Tensor e3m0_codes(const torch::Tensor& x_NB, const torch::Tensor& scale_N1) {
  torch::Tensor r = x_NB.abs().div(scale_N1).contiguous();
  torch::Tensor bits = r.view(torch::kInt32);
  torch::Tensor exponent = bits.bitwise_right_shift(23).sub(127).add(bits.bitwise_right_shift(22).bitwise_and(1));
  torch::Tensor field =
      torch::where(r >= std::ldexp(1.0f, -7), exponent.clamp(-6, 0).add(7), torch::zeros_like(exponent));
  torch::Tensor negative = x_NB.lt(0).logical_and(field.gt(0)).to(torch::kInt32);
  return field.add(negative.mul(8)).to(torch::kUInt8);
}

// Two codes of 0..15 per byte: element 2j in the low nibble, 2j+1 in the high.
torch::Tensor pack_nibbles(const torch::Tensor& codes, int64_t numel) {
  torch::Tensor nib = torch::zeros({2 * ((numel + 1) / 2)}, torch::kUInt8);
  nib.slice(0, 0, numel).copy_(codes.reshape({-1}).slice(0, 0, numel));
  nib = nib.view({-1, 2});
  return nib.select(1, 0).bitwise_or(nib.select(1, 1).mul(16));
}

torch::Tensor unpack_nibbles(const torch::Tensor& packed, int64_t numel) {
  torch::Tensor lo = packed.bitwise_and(15), hi = packed.div(16, "floor");
  return torch::stack({lo, hi}, 1).reshape({-1}).slice(0, 0, numel);
}

}  // namespace

double wire_bytes(WireFormat format, int64_t numel) {
  switch (format) {
    case WireFormat::fp32: return 4.0 * numel;
    case WireFormat::fp16:
    case WireFormat::bf16: return 2.0 * numel;
    case WireFormat::int8:
    case WireFormat::int4:
    case WireFormat::e3m0: return static_cast<double>(value_bytes(format, numel) + 4 * blocks_of(numel));
  }
  return 0;
}

torch::Tensor encode_quantized(const torch::Tensor& x, WireFormat format) {
  if (!quantized(format)) {
    throw std::invalid_argument("encode_quantized: " + wire_format_name(format) + " is not a quantized format");
  }
  const int64_t n = x.numel(), blocks = blocks_of(n);
  if (n == 0) return torch::empty({0}, torch::kUInt8);
  torch::Tensor v_NB = torch::zeros({blocks * kQuantBlock}, torch::kFloat32);  // zero-padded to whole blocks
  v_NB.slice(0, 0, n).copy_(x.detach().reshape({-1}));
  v_NB = v_NB.view({blocks, kQuantBlock});
  torch::Tensor absmax_N1 = v_NB.abs().amax(1, /*keepdim=*/true);
  // int8/int4: s = absmax/q_max, values round(x/s); e3m0: s = absmax, values the nearest power of two.
  torch::Tensor scale_N1 = format == WireFormat::e3m0 ? absmax_N1 : absmax_N1.div(static_cast<double>(q_max(format)));
  torch::Tensor safe_N1 = torch::where(scale_N1 > 0, scale_N1, torch::ones_like(scale_N1));  // all-zero block

  const int64_t vbytes = value_bytes(format, n);
  torch::Tensor out = torch::empty({vbytes + 4 * blocks}, torch::kUInt8);
  if (format == WireFormat::e3m0) {
    out.slice(0, 0, vbytes).copy_(pack_nibbles(e3m0_codes(v_NB, safe_N1), n));
  } else {
    const int64_t qmax = q_max(format);
    torch::Tensor q = v_NB.div(safe_N1).round_().clamp_(-qmax, qmax).reshape({-1}).slice(0, 0, n);
    if (format == WireFormat::int8) {
      out.slice(0, 0, n).copy_(q.to(torch::kInt8).view(torch::kUInt8));
    } else {
      // Two's-complement-free nibbles: q + 8 in [1, 15].
      out.slice(0, 0, vbytes).copy_(pack_nibbles((q + 8).to(torch::kUInt8), n));
    }
  }
  torch::Tensor scales = scale_N1.reshape({-1}).contiguous();
  std::memcpy(out.data_ptr<uint8_t>() + vbytes, scales.data_ptr<float>(), 4 * blocks);
  return out;
}

torch::Tensor decode_quantized(const torch::Tensor& bytes, WireFormat format, int64_t numel) {
  if (!quantized(format)) {
    throw std::invalid_argument("decode_quantized: " + wire_format_name(format) + " is not a quantized format");
  }
  const int64_t blocks = blocks_of(numel), vbytes = value_bytes(format, numel);
  if (bytes.numel() != vbytes + 4 * blocks) throw std::invalid_argument("decode_quantized: wrong byte count");
  if (numel == 0) return torch::empty({0}, torch::kFloat32);
  const torch::Tensor b = bytes.contiguous();
  torch::Tensor payload = b.slice(0, 0, vbytes);
  torch::Tensor q;  // the values in units of their block's scale
  if (format == WireFormat::int8) {
    q = payload.view(torch::kInt8).to(torch::kFloat32);
  } else if (format == WireFormat::int4) {
    q = unpack_nibbles(payload, numel).to(torch::kFloat32).sub_(8);
  } else {
    torch::Tensor codes = unpack_nibbles(payload, numel).to(torch::kLong);
    torch::Tensor sign = 1.0 - 2.0 * codes.div(8, "floor").to(torch::kFloat32);
    q = e3m0_magnitudes().index({codes.bitwise_and(7)}).mul_(sign);
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
    case WireFormat::e3m0: {
      // The bytes are laid out in host memory, as on their way to a socket: a GPU tensor goes there.
      const torch::Tensor bytes = encode_quantized(x.to(torch::kCPU), format);
      return decode_quantized(bytes, format, x.numel()).view(x.sizes()).to(x.device(), x.scalar_type());
    }
  }
  return x.clone();
}

}  // namespace locosim
