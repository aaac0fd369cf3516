// Byte-level tokenizer: one token per byte of UTF-8 text, so any text round-trips and the vocabulary
// is fixed at 256. No merges, no special tokens (a BPE tokenizer would be a separate file).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace locosim {

constexpr int64_t kByteVocabSize = 256;

// Returns the bytes of `text` as an int64 1-D tensor of values in [0, 256).
torch::Tensor encode_bytes(std::string_view text);

// Inverse of encode_bytes. REQUIRES: `ids` is a 1-D integer tensor of values in [0, 256);
// throws std::invalid_argument otherwise.
std::string decode_bytes(const torch::Tensor& ids);

}  // namespace locosim
