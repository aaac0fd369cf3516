// Wire formats: how a tensor travels, its exact byte count, and the real rounding it suffers.
// Every dense format lives here so that bytes charged and numerics applied can never disagree.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/wire_format.hpp"

namespace locosim {

// Bytes that `numel` elements take on the wire:
//   fp32 4·n, fp16/bf16 2·n, int8 n + 4·⌈n/64⌉, int4 and e3m0 ⌈n/2⌉ + 4·⌈n/64⌉.
double wire_bytes(WireFormat format, int64_t numel);

// `x` as the receiver sees it: rounded to the format and back to x's dtype. A new tensor.
torch::Tensor through_wire(const torch::Tensor& x, WireFormat format);

// The bytes of x in a quantized format (int8/int4/e3m0): the packed values, then the fp32 scales.
// A uint8 tensor of exactly wire_bytes(format, x.numel()) bytes.
torch::Tensor encode_quantized(const torch::Tensor& x, WireFormat format);
// The fp32 values (flat, `numel` of them) that encode_quantized's bytes stand for.
torch::Tensor decode_quantized(const torch::Tensor& bytes, WireFormat format, int64_t numel);

}  // namespace locosim
