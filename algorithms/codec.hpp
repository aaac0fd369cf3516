// Wire formats: how a tensor travels, its exact byte count, and the real rounding it suffers.
// Every format lives here so that bytes charged and numerics applied can never disagree.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace locosim {

enum class WireFormat { fp32, fp16, bf16 };

// Names as written in scenarios ("fp32", "fp16", "bf16").
const std::vector<std::string>& wire_format_names();
WireFormat wire_format_from_name(const std::string& name);  // REQUIRES: name is in wire_format_names()
std::string wire_format_name(WireFormat format);

// Bytes that `numel` elements take on the wire.
double wire_bytes(WireFormat format, int64_t numel);

// `x` as the receiver sees it: rounded to the format and back to x's dtype. A new tensor.
torch::Tensor through_wire(const torch::Tensor& x, WireFormat format);

}  // namespace locosim
