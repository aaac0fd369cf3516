// How a sparse payload's values and positions travel (DeMo's `values:` and `indices:` keys) and its
// exact byte count. No LibTorch: the scenario loader reads them (sparse_codec.hpp packs the payloads).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace locosim {

// How the kept coefficients travel.
//   fp32: each value as it is (4 bytes): bloc97/DeMo's demo.py gathers the values in the parameter's
//         dtype, fp32 for fp32 parameters.
//   fp16, bf16: each value rounded to the format (2 bytes).
//   sign: 1 bit per value (set = negative) plus one fp32 scale per tensor, the mean |value| of the
//         kept coefficients: the scaled sign of EF-SignSGD (Karimireddy et al. 2019, arXiv 1901.09847).
//         Psyche's DisTrO sends the bits alone; the scale costs 4 bytes and keeps the magnitude.
enum class SparseValues { fp32, fp16, bf16, sign };

const std::vector<std::string>& sparse_values_names();  // "fp32", "fp16", "bf16", "sign"
SparseValues sparse_values_from_name(const std::string& name);  // REQUIRES: a name from the list
std::string sparse_values_name(SparseValues values);

// How the kept coefficients' positions travel.
//   packed: the smallest unsigned integer that holds a chunk position (index_bytes), none when a
//           chunk is sent whole.
//   int64:  8 bytes each, always, as bloc97/DeMo's demo.py gathers torch.topk's indices (it clamps k
//           to the chunk and still sends them when every coefficient is kept).
// The positions are the same either way: only the bytes differ, never the numerics.
enum class SparseIndices { packed, int64 };

const std::vector<std::string>& sparse_indices_names();  // "packed", "int64"
SparseIndices sparse_indices_from_name(const std::string& name);  // REQUIRES: a name from the list
std::string sparse_indices_name(SparseIndices indices);

// Bytes of one chunk position: the smallest of 1, 2, 4, 8 whose unsigned range holds
// 0 .. chunk_numel-1 (a 64-wide 1-D chunk: 1; a 64×64 block: 2).
int index_bytes(int64_t chunk_numel);

// Exact wire bytes of one tensor's payload, with k clamped to the chunk (k' = min(k, chunk_numel)):
//   fp32:       chunks·k'·(b_idx + 4)
//   fp16/bf16:  chunks·k'·(b_idx + 2)
//   sign:       chunks·k'·b_idx + ⌈chunks·k'/8⌉ + 4
// b_idx: packed, index_bytes(chunk_numel), and 0 when k' = chunk_numel (every coefficient is sent, in
// order: the positions are implicit; a tensor that fits in fewer than k coefficients is sent whole);
// int64, 8.
double sparse_bytes(int64_t chunks, int64_t chunk_numel, int64_t k, SparseValues values,
                    SparseIndices indices = SparseIndices::packed);

}  // namespace locosim
