// SparseLoCo's payload (sparseloco.hpp): each tensor's chunked top-k, its 2-bit quantization and
// packing, and the error-feedback buffer the payload is drawn from.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "algorithms/dct.hpp"
#include "algorithms/sparseloco.hpp"

namespace locosim {

// The 4 levels of 2-bit quantization of `kept` (1-D, fp32), as tplr's TopKCompressor._quantize_values
// with 4 bins: shift = mean(v), c = v − shift, σ = ‖c‖/√(n−1), step = range·σ/4 (1 if that is 0 or not
// finite), code = clamp(round(c/step + 2), 0, 3); level j = shift + the mean of the c coded j (shift if
// none). The receiver sees levels[code].
struct Quantized {
  torch::Tensor codes;   // kLong, kept's shape, values 0..3
  torch::Tensor levels;  // kFloat (4)
};
Quantized sparseloco_quantize(const torch::Tensor& kept, double quant_range);

// Bits of one position within a chunk of n values: ⌈log2 n⌉ (4096 → 12, as tplr packs them).
int sparseloco_index_bits(int64_t chunk_numel);

// Exact wire bytes of one tensor's payload, with k' = min(k, n), n = chunk_numel, C chunks:
//   q2:   ⌈C·k'·b_idx / 8⌉ + ⌈C·k'·2 / 8⌉ + 16      (indices, 2-bit codes, 4 fp32 levels)
//   fp32: ⌈C·k'·b_idx / 8⌉ + C·k'·4
// b_idx = sparseloco_index_bits(n), 0 when k' = n (every value is sent in order: no positions).
double sparseloco_tensor_bytes(int64_t chunks, int64_t chunk_numel, int64_t k, SparseLoCoValues values);

// Bytes one worker uploads per round for parameters of these shapes (chunked as chunk_layout(shape, s)),
// before Wire::scale: the sum of sparseloco_tensor_bytes over the tensors.
double sparseloco_payload_bytes(const SparseLoCoConfig& cfg, const std::vector<std::vector<int64_t>>& shapes);

// The codec of one tensor: chunked top-k of |x|, quantized, bit-packed. The payload is three tensors
// (packed positions kByte, packed codes kByte or fp32 values, levels kFloat (4) or (0)) whose nbytes sum
// to bytes(). On the meta device encode returns tensors of those sizes and does no arithmetic.
class SparseLoCoCodec {
 public:
  SparseLoCoCodec(const std::vector<int64_t>& shape, const SparseLoCoConfig& cfg);

  const ChunkLayout& layout() const { return layout_; }
  int64_t k() const { return k_; }
  double bytes() const { return sparseloco_tensor_bytes(layout_.chunks(), layout_.chunk_numel(), k_, values_); }

  // x (the tensor's shape) → its payload.
  std::vector<torch::Tensor> encode(const torch::Tensor& x) const;
  // The payload at wire[first .. first+2] → what it carries, in the tensor's shape (zeros elsewhere), fp32.
  torch::Tensor decode(const std::vector<torch::Tensor>& wire, size_t first = 0) const;

 private:
  ChunkLayout layout_;
  int64_t k_;
  int index_bits_;  // 0 when every value is sent
  SparseLoCoValues values_;
  double quant_range_;
};

// One replica's error feedback over its tensors: push(Δ) does e ← β·e + Δ and encodes e; commit(sent)
// then does e ← e − sent, sent being what the payload decodes to (the receivers' view, rounding
// included). Nothing is lost: e_t = (β·e_{t−1} + Δ_t) − sent_t as fp32 computes it; with β = 1,
// Σ sent + e = Σ Δ. A round given up is not committed: what it would have sent stays in e.
class ErrorFeedback {
 public:
  ErrorFeedback(const std::vector<torch::Tensor>& like, const SparseLoCoConfig& cfg);

  // e ← β·e + Δ; appends each tensor's payload to `wire` and returns what it sends (the payloads
  // decoded, in the tensors' shapes).
  std::vector<torch::Tensor> push(const std::vector<torch::Tensor>& delta, std::vector<torch::Tensor>& wire);
  // e ← e − sent: the round's payloads arrived.
  void commit(const std::vector<torch::Tensor>& sent);
  const std::vector<torch::Tensor>& buffer() const { return e_; }
  void clear();
  const std::vector<SparseLoCoCodec>& codecs() const { return codecs_; }
  double bytes() const;

 private:
  double decay_;
  std::vector<SparseLoCoCodec> codecs_;
  std::vector<torch::Tensor> e_;
};

}  // namespace locosim
