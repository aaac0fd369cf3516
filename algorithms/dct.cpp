// Chunked orthonormal DCT-II (see dct.hpp): cached bases, blocks as batched matrix products.
#include "algorithms/dct.hpp"

#include <torch/utils.h>

#include <cmath>
#include <map>
#include <mutex>

namespace locosim {

torch::Tensor dct_basis(int64_t n) {
  static std::mutex mutex;
  static std::map<int64_t, torch::Tensor> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  torch::NoGradGuard no_grad;  // scoped to this function: no simulator call happens inside
  // Built in double, stored in fp32: D[k][i] = c_k cos(π (2i+1) k / 2n).
  torch::Tensor k = torch::arange(n, torch::kFloat64).unsqueeze(1);
  torch::Tensor i = torch::arange(n, torch::kFloat64).unsqueeze(0);
  torch::Tensor d = torch::cos(M_PI * (2 * i + 1) * k / (2.0 * static_cast<double>(n)));
  d.mul_(std::sqrt(2.0 / static_cast<double>(n)));
  d[0].mul_(1.0 / std::sqrt(2.0));  // c_0 = √(1/n) = √(2/n) / √2
  torch::Tensor basis = d.to(torch::kFloat32).contiguous();
  cache.emplace(n, basis);
  return basis;
}

ChunkLayout chunk_layout(const std::vector<int64_t>& shape, int64_t s) {
  ChunkLayout l;
  l.shape = shape;
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (shape.size() >= 2) {
    l.rows = shape[0];
    l.cols = shape[0] == 0 ? 0 : numel / shape[0];
  } else {
    l.rows = 1;
    l.cols = numel;
  }
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  l.block_rows = std::max<int64_t>(1, std::min(l.rows, s));
  l.block_cols = std::max<int64_t>(1, std::min(l.cols, s));
  l.row_blocks = ceil_div(l.rows, l.block_rows);
  l.col_blocks = ceil_div(l.cols, l.block_cols);
  return l;
}

ChunkedDct::ChunkedDct(const std::vector<int64_t>& shape, int64_t s)
    : layout_(chunk_layout(shape, s)),
      basis_rows_(dct_basis(layout_.block_rows)),
      basis_cols_(dct_basis(layout_.block_cols)) {}

torch::Tensor ChunkedDct::encode(const torch::Tensor& x) const {
  torch::NoGradGuard no_grad;
  const ChunkLayout& l = layout_;
  torch::Tensor m = x.detach().to(torch::kFloat32).reshape({l.rows, l.cols});
  if (l.padded()) {
    // constant_pad_nd pads the last dimension first: {cols_left, cols_right, rows_top, rows_bottom}.
    m = torch::constant_pad_nd(m, {0, l.col_blocks * l.block_cols - l.cols, 0, l.row_blocks * l.block_rows - l.rows});
  }
  // (rb·br, cb·bc) → (rb, cb, br, bc): one block per leading index pair.
  torch::Tensor blocks = m.view({l.row_blocks, l.block_rows, l.col_blocks, l.block_cols}).permute({0, 2, 1, 3});
  const torch::Tensor rows = basis_rows_.to(m.device()), cols = basis_cols_.to(m.device());  // no copy on the CPU
  torch::Tensor coefficients = torch::matmul(torch::matmul(rows, blocks), cols.t());
  return coefficients.reshape({l.chunks(), l.chunk_numel()});
}

torch::Tensor ChunkedDct::decode(const torch::Tensor& coefficients) const {
  torch::NoGradGuard no_grad;
  const ChunkLayout& l = layout_;
  torch::Tensor c = coefficients.to(torch::kFloat32).reshape({l.row_blocks, l.col_blocks, l.block_rows, l.block_cols});
  const torch::Tensor rows = basis_rows_.to(c.device()), cols = basis_cols_.to(c.device());
  torch::Tensor blocks = torch::matmul(torch::matmul(rows.t(), c), cols);
  torch::Tensor m = blocks.permute({0, 2, 1, 3}).reshape({l.row_blocks * l.block_rows, l.col_blocks * l.block_cols});
  if (l.padded()) m = m.slice(0, 0, l.rows).slice(1, 0, l.cols);
  return m.contiguous().view(l.shape);
}

}  // namespace locosim
