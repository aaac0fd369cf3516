// Pruning DiLoCo's pseudo-gradient before it is sent (arXiv 2311.08105, Table 6), trimmed by the rule of
// TIES-Merging (Yadav et al. 2023, arXiv 2306.01708) that the paper cites, then merged by the plain mean
// (the paper's table) or TIES's elect sign and disjoint mean (its appendix's variant).
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "algorithms/codec.hpp"
#include "algorithms/sparse_codec.hpp"

namespace locosim {

// Bytes of one tensor's trimmed Δ_i (n values, a fraction `prune` of them dropped, k = n − ⌊prune·n⌋
// kept) on the wire, whichever is smaller:
//   sparse  k·b_idx + wire_bytes(format, k)   positions (b_idx = index_bytes(n): 1, 2, 4 or 8 bytes)
//                                             and the kept values in the wire format
//   dense   wire_bytes(format, n)             the trimmed tensor whole, its zeros included
// A tie goes to dense (nothing to decode). fp32 values (b = 4) with 2-byte positions: sparse from
// prune > 1/3 on.
double prune_bytes(int64_t numel, double prune, WireFormat format);

// One tensor's trimmed Δ_i, encoded as prune_bytes says: two tensors on the wire, [positions, values],
// whose nbytes add up to exactly prune_bytes. Positions: kByte, k·b_idx bytes little-endian (sparse)
// or none (dense). Values: fp32/fp16/bf16 as that dtype, int8/int4/e3m0 as encode_quantized's bytes.
class PruneCodec {
 public:
  // REQUIRES: numel >= 1, prune in [0, 1).
  PruneCodec(int64_t numel, double prune, WireFormat format);

  int64_t kept() const { return kept_; }  // k
  bool sparse() const { return sparse_; }
  double bytes() const;

  // Trim (TIES step 1): keeps the k values of largest |Δ_i| (exactly k: torch::topk breaks ties the
  // same way on every run; TIES's reference keeps every value at or above the k-th, which can be more)
  // and appends [positions, values] to `wire`. On the meta device (timing only) the two tensors have
  // the right sizes and no values.
  void encode(const torch::Tensor& delta, std::vector<torch::Tensor>& wire) const;
  // The trimmed Δ_i a receiver sees (the kept values as the wire rounded them, zeros elsewhere), from
  // wire[first], wire[first + 1]: flat fp32, n values.
  torch::Tensor decode(const std::vector<torch::Tensor>& wire, size_t first) const;

 private:
  int64_t numel_;
  int64_t kept_;
  WireFormat format_;
  bool sparse_;
  SparseCodec top_k_;  // one chunk of n: the positions of the k largest |Δ_i|, packed
};

// TIES steps 2 and 3 on the trimmed Δ_i of every worker (flat fp32, in rank order):
//   elect:     γ = sign(Σ_i Δ_i) per value; a value whose Δ_i sum to exactly 0 takes the tensor's
//              majority sign, sign(Σ γ) (the reference's resolve_zero_signs)
//   merge:     Δ = Σ_i Δ_i·[sign Δ_i = γ] / max(1, #{i : sign Δ_i = γ})
// the mean over the workers that agree with the elected sign only. Summed in rank order, so every
// worker gets the same bits. REQUIRES: at least one tensor, all of the same size.
torch::Tensor ties_merge(const std::vector<torch::Tensor>& trimmed);

// The plain mean of the trimmed Δ_i, Σ_i Δ_i / (number of tensors), summed in rank order: a value one
// worker dropped counts as its zero. REQUIRES: as ties_merge.
torch::Tensor mean_merge(const std::vector<torch::Tensor>& trimmed);

}  // namespace locosim
