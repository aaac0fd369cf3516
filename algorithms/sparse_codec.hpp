// Top-k per chunk of DCT coefficients, as DeMo (arXiv 2411.19870, Alg. 1) puts them on the wire:
// (index, value) pairs, indices in the smallest unsigned integer that holds a chunk position, values
// in fp16/bf16 or as 1-bit signs with one scale per tensor. The payload's tensors weigh exactly the
// bytes charged, and every worker's payloads are decoded and averaged in rank order.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace locosim {

// How the kept coefficients travel.
//   fp16, bf16: each value rounded to the format (2 bytes).
//   sign: 1 bit per value (set = negative) plus one fp32 scale per tensor, the mean |value| of the
//         kept coefficients: the scaled sign of EF-SignSGD (Karimireddy et al. 2019, arXiv 1901.09847).
//         Psyche's DisTrO sends the bits alone; the scale costs 4 bytes and keeps the magnitude.
enum class SparseValues { fp16, bf16, sign };

const std::vector<std::string>& sparse_values_names();  // "fp16", "bf16", "sign"
SparseValues sparse_values_from_name(const std::string& name);  // REQUIRES: a name from the list
std::string sparse_values_name(SparseValues values);

// Bytes of one chunk position: the smallest of 1, 2, 4, 8 whose unsigned range holds
// 0 .. chunk_numel-1 (a 64-wide 1-D chunk: 1; a 64×64 block: 2).
int index_bytes(int64_t chunk_numel);

// Exact wire bytes of one tensor's payload, with k clamped to the chunk (k' = min(k, chunk_numel)):
//   fp16/bf16:  chunks·k'·(b_idx + 2)
//   sign:       chunks·k'·b_idx + ⌈chunks·k'/8⌉ + 4
// When k' = chunk_numel every coefficient is sent, in order: the positions are implicit and b_idx = 0
// (a tensor that fits in fewer than k coefficients is sent whole).
double sparse_bytes(int64_t chunks, int64_t chunk_numel, int64_t k, SparseValues values);

// One tensor's payload as it travels. Every tensor's nbytes is what the wire carries.
struct SparsePayload {
  torch::Tensor indices;  // kByte (chunks, k'·b_idx): positions little-endian; (0) when sent whole
  torch::Tensor values;   // kHalf/kBFloat16 (chunks, k'); sign: kByte (⌈chunks·k'/8⌉), bit j = value j < 0
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
  SparseCodec(int64_t chunks, int64_t chunk_numel, int64_t k, SparseValues values);

  int64_t k() const { return k_; }  // clamped to chunk_numel
  bool whole() const { return k_ == chunk_numel_; }
  double bytes() const { return sparse_bytes(chunks_, chunk_numel_, k_, values_); }

  // Keeps the k' largest |X| of each chunk (ties: torch::topk's choice, the same on every run).
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
  int index_bytes_;
};

}  // namespace locosim
