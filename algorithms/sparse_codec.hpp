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

#include "algorithms/sparse_format.hpp"

namespace locosim {

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
