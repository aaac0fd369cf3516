// Top-k per chunk of DCT coefficients, as DeMo (arXiv 2411.19870, Alg. 1) puts them on the wire:
// (index, value) pairs, indices in the smallest unsigned integer that holds a chunk position or as
// the reference's int64, values in fp32/fp16/bf16 or as 1-bit signs with one scale per tensor. The
// payload's tensors weigh exactly the bytes charged, and every worker's payloads are decoded and
// averaged in rank order.
#pragma once
#include <torch/types.h>

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

// One tensor's payload as it travels. Every tensor's nbytes is what the wire carries.
struct SparsePayload {
  torch::Tensor indices;  // packed: kByte (chunks, k'·b_idx), positions little-endian; (0) when sent
                          // whole. int64: kLong (chunks, k'), as torch::topk returns them
  torch::Tensor values;   // kFloat/kHalf/kBFloat16 (chunks, k'); sign: kByte (⌈chunks·k'/8⌉), bit j = value j < 0
  torch::Tensor scale;    // sign: kFloat (1); otherwise (0)

  double bytes() const;   // Σ nbytes
  // The three tensors in order, for Transport::all_gather, and back.
  void append_to(std::vector<torch::Tensor>& wire) const;
  static SparsePayload from(const std::vector<torch::Tensor>& wire, size_t first);
};

// The codec of one tensor's coefficients, shaped (chunks, chunk_numel).
class SparseCodec {
 public:
  // REQUIRES: chunks >= 0, chunk_numel >= 1, k >= 1.
  SparseCodec(int64_t chunks, int64_t chunk_numel, int64_t k, SparseValues values,
              SparseIndices indices = SparseIndices::packed);

  int64_t k() const { return k_; }  // clamped to chunk_numel
  bool whole() const { return k_ == chunk_numel_; }
  // Every coefficient sent in order with no positions on the wire: whole chunks, packed indices.
  bool implicit_positions() const { return whole() && indices_ == SparseIndices::packed; }
  double bytes() const { return sparse_bytes(chunks_, chunk_numel_, k_, values_, indices_); }

  // Keeps the k' largest |X| of each chunk (ties: torch::topk's choice, the same on every run); a
  // whole chunk keeps its coefficients in order (with int64 indices too: 0 .. chunk_numel-1).
  SparsePayload encode(const torch::Tensor& coefficients) const;

  // The coefficients the receiver sees: the kept ones as the wire rounded them, zeros elsewhere. fp32.
  torch::Tensor decode(const SparsePayload& payload) const;

  // Every worker's payload (by rank) decoded and averaged per coefficient over the workers that sent
  // it, as DeMo's scatter_reduce("mean", include_self=False) does — but summed in fp32 in rank order,
  // so the result is bit-identical whatever order the payloads arrived in. fp32 (chunks, chunk_numel).
  torch::Tensor mean_decode(const std::vector<SparsePayload>& by_rank) const;

 private:
  // Every payload's positions and values at once, stacked by rank: kLong and kFloat (K, chunks, k').
  torch::Tensor positions(const std::vector<SparsePayload>& by_rank) const;
  torch::Tensor values_fp32(const std::vector<SparsePayload>& by_rank) const;

  int64_t chunks_;
  int64_t chunk_numel_;
  int64_t k_;
  SparseValues values_;
  SparseIndices indices_;
  int index_bytes_;  // packed only
};

}  // namespace locosim
