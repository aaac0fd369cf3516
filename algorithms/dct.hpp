// The orthonormal DCT-II applied per chunk, as DeMo compresses momentum (arXiv 2411.19870, Alg. 1:
// "fast components"): 1-D tensors in chunks of s, matrices in s×s blocks, each a pair of matrix products.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace locosim {

// The n×n orthonormal DCT-II matrix: D[k][i] = c_k · cos(π (2i+1) k / 2n), c_0 = √(1/n), c_k = √(2/n).
// D·Dᵀ = I, so the inverse (the DCT-III) is Dᵀ. Computed once per n and cached (fp32);
// safe to call from several threads.
torch::Tensor dct_basis(int64_t n);

// How one tensor is cut into chunks. The tensor is viewed as a rows × cols matrix (1-D and scalars:
// 1 × numel; 3-D and up: shape[0] × the rest). A chunk is block_rows × block_cols with
// block = min(extent, s) per axis, so a 1-D chunk is 1 × s and a matrix chunk s × s; an axis shorter
// than s is one chunk wide. An axis that is not a multiple of its block is zero-padded at its end
// (176 rows in blocks of 64: 3 blocks, the last one with 16 zero rows); the padding is dropped
// again on decode. (DeMo's reference picks the largest divisor ≤ s instead: 176 → 44, and a prime
// extent degenerates to chunks of 1. Padding keeps every chunk s wide, whatever the shape.)
struct ChunkLayout {
  std::vector<int64_t> shape;  // the tensor's own shape
  int64_t rows = 1, cols = 1;  // the matrix view
  int64_t block_rows = 1, block_cols = 1;
  int64_t row_blocks = 1, col_blocks = 1;  // ⌈rows / block_rows⌉, ⌈cols / block_cols⌉

  int64_t chunks() const { return row_blocks * col_blocks; }
  int64_t chunk_numel() const { return block_rows * block_cols; }
  bool padded() const { return row_blocks * block_rows != rows || col_blocks * block_cols != cols; }
};

// REQUIRES: s >= 1.
ChunkLayout chunk_layout(const std::vector<int64_t>& shape, int64_t s);

// The chunked transform of one tensor shape. encode and decode are exact inverses on the tensor
// (up to fp32 rounding); decode of arbitrary coefficients is the least-squares inverse restricted to
// the unpadded part.
class ChunkedDct {
 public:
  ChunkedDct(const std::vector<int64_t>& shape, int64_t s);

  const ChunkLayout& layout() const { return layout_; }

  // x (the tensor's shape) → X (chunks, chunk_numel): per block B, X_B = D_r · B · D_cᵀ, flattened
  // row-major; chunks are ordered by block row, then block column.
  torch::Tensor encode(const torch::Tensor& x) const;

  // X (chunks, chunk_numel) → x (the tensor's shape): B = D_rᵀ · X_B · D_c, the padding cropped.
  torch::Tensor decode(const torch::Tensor& coefficients) const;

 private:
  ChunkLayout layout_;
  torch::Tensor basis_rows_;  // D_r (block_rows × block_rows)
  torch::Tensor basis_cols_;  // D_c (block_cols × block_cols)
};

}  // namespace locosim
