// The dense wire formats a policy's `wire:` key names. No LibTorch: the scenario loader reads them
// (codec.hpp counts their bytes and applies their rounding).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace locosim {

// fp32/fp16/bf16: IEEE casts, round to nearest even.
// int8/int4: symmetric absmax quantization per block of kQuantBlock values of the flattened tensor
// (Dettmers et al. 2022, "8-bit optimizers via block-wise quantization", arXiv 2110.02861):
// one fp32 scale s = absmax/q_max per block, values round(x/s) in [-q_max, q_max]
// (q_max = 127 for int8, 7 for int4; int4 packs two values per byte).
// e3m0: the 4-bit float of Streaming DiLoCo (Douillard et al. 2025, arXiv 2501.18512): 1 sign bit,
// 3 exponent bits, no mantissa. The paper names the format and accumulates in fp32; the scaling,
// exponent bias, rounding and zero are not given there, so the simplest faithful rule is used:
// one fp32 scale s = absmax per block of kQuantBlock values (as int4), and |x|/s rounded to the
// nearest of {0, 2^-6, 2^-5, …, 2^0} (ties to the larger magnitude). Exponent field e = 0 is zero,
// e = 1..7 stands for ±s·2^(e−7); no infinities or NaN. Packed two per byte like int4: nibble =
// sign·8 + e (zero is always +0), element 2j in the low nibble.
enum class WireFormat { fp32, fp16, bf16, int8, int4, e3m0 };

constexpr int64_t kQuantBlock = 64;  // values per fp32 scale in int8/int4/e3m0

// Names as written in scenarios ("fp32", "fp16", "bf16", "int8", "int4", "e3m0").
const std::vector<std::string>& wire_format_names();
WireFormat wire_format_from_name(const std::string& name);  // REQUIRES: name is in wire_format_names()
std::string wire_format_name(WireFormat format);

}  // namespace locosim
