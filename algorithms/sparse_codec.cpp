// Top-k sparse payloads (see sparse_codec.hpp): byte-exact packing, decode, rank-order mean.
#include "algorithms/sparse_codec.hpp"

#include <torch/utils.h>

#include <stdexcept>

namespace locosim {

double SparsePayload::bytes() const {
  return static_cast<double>(indices.nbytes() + values.nbytes() + scale.nbytes());
}

void SparsePayload::append_to(std::vector<torch::Tensor>& wire) const {
  wire.push_back(indices);
  wire.push_back(values);
  wire.push_back(scale);
}

SparsePayload SparsePayload::from(const std::vector<torch::Tensor>& wire, size_t first) {
  return SparsePayload{wire.at(first), wire.at(first + 1), wire.at(first + 2)};
}

SparseCodec::SparseCodec(int64_t chunks, int64_t chunk_numel, int64_t k, SparseValues values, SparseIndices indices)
    : chunks_(chunks),
      chunk_numel_(chunk_numel),
      k_(std::min(k, chunk_numel)),
      values_(values),
      indices_(indices),
      index_bytes_(index_bytes(chunk_numel)) {}

namespace {

// Bit j of the result's byte j/8 (least significant first) is bits[j]. bits: kBool, 1-D.
torch::Tensor pack_bits(const torch::Tensor& bits) {
  const int64_t n = bits.numel();
  torch::Tensor padded = torch::zeros({(n + 7) / 8 * 8}, bits.options().dtype(torch::kLong));
  padded.slice(0, 0, n).copy_(bits.reshape({-1}));
  torch::Tensor weights = torch::tensor({1, 2, 4, 8, 16, 32, 64, 128}, torch::kLong).to(bits.device());
  return (padded.view({-1, 8}) * weights).sum(1).to(torch::kByte);
}

}  // namespace

SparsePayload SparseCodec::encode(const torch::Tensor& coefficients) const {
  torch::NoGradGuard no_grad;
  torch::Tensor x = coefficients.detach().to(torch::kFloat32).reshape({chunks_, chunk_numel_});
  SparsePayload p;
  torch::Tensor kept;
  if (whole()) {
    // In order, so that both index formats keep the same values in the same order (the sign
    // format's scale is a sum over them): int64 sends the positions 0 .. n-1 explicitly.
    kept = x;
    p.indices = implicit_positions()
                    ? torch::empty({0}, x.options().dtype(torch::kByte))
                    : torch::arange(chunk_numel_, x.options().dtype(torch::kLong))
                          .expand({chunks_, chunk_numel_})
                          .contiguous();
  } else {
    torch::Tensor pos = std::get<1>(torch::topk(x.abs(), k_, /*dim=*/1, /*largest=*/true, /*sorted=*/false));
    kept = x.gather(1, pos);
    if (indices_ == SparseIndices::int64) {
      p.indices = pos.contiguous();
    } else {
      std::vector<torch::Tensor> bytes;  // little-endian: byte j holds bits 8j .. 8j+7
      for (int j = 0; j < index_bytes_; ++j) bytes.push_back(torch::bitwise_and(pos.bitwise_right_shift(8 * j), 0xFF));
      p.indices = torch::stack(bytes, 2).to(torch::kByte).reshape({chunks_, k_ * index_bytes_});
    }
  }
  switch (values_) {
    case SparseValues::fp32: p.values = kept.contiguous().clone(); break;  // never a view of the caller's X
    case SparseValues::fp16: p.values = kept.to(torch::kHalf).contiguous(); break;
    case SparseValues::bf16: p.values = kept.to(torch::kBFloat16).contiguous(); break;
    case SparseValues::sign:
      p.values = pack_bits(kept.lt(0));
      p.scale = (kept.numel() > 0 ? kept.abs().mean() : torch::zeros({}, x.options())).reshape({1});
      break;
  }
  if (!p.scale.defined()) p.scale = torch::empty({0}, x.options());
  return p;
}

torch::Tensor SparseCodec::positions(const std::vector<SparsePayload>& by_rank) const {
  const int64_t world = static_cast<int64_t>(by_rank.size());
  if (implicit_positions()) {
    const torch::Device device = by_rank.at(0).values.device();
    return torch::arange(chunk_numel_, torch::TensorOptions(torch::kLong).device(device))
        .expand({world, chunks_, chunk_numel_})
        .contiguous();
  }
  std::vector<torch::Tensor> indices;
  for (const auto& p : by_rank) indices.push_back(p.indices);
  if (indices_ == SparseIndices::int64) return torch::stack(indices).view({world, chunks_, k_});
  torch::Tensor bytes = torch::stack(indices).view({world, chunks_, k_, index_bytes_}).to(torch::kLong);
  torch::Tensor pos = bytes.select(3, 0).clone();
  for (int j = 1; j < index_bytes_; ++j) pos.add_(bytes.select(3, j).bitwise_left_shift(8 * j));
  return pos;
}

torch::Tensor SparseCodec::values_fp32(const std::vector<SparsePayload>& by_rank) const {
  const int64_t world = static_cast<int64_t>(by_rank.size());
  std::vector<torch::Tensor> values, scales;
  for (const auto& p : by_rank) {
    values.push_back(p.values);
    scales.push_back(p.scale);
  }
  if (values_ != SparseValues::sign) return torch::stack(values).to(torch::kFloat32).view({world, chunks_, k_});
  // Each rank's bits were packed on their own (padded to a whole byte): unpack per row, then trim.
  torch::Tensor weights = torch::tensor({1, 2, 4, 8, 16, 32, 64, 128}, torch::kLong).to(values.at(0).device());
  torch::Tensor bits = torch::bitwise_and(torch::stack(values).to(torch::kLong).unsqueeze(2), weights).ne(0);
  torch::Tensor negative = bits.view({world, -1}).slice(1, 0, chunks_ * k_).reshape({world, chunks_, k_});
  // ±scale: 1 − 2·bit, times each rank's one scale for the tensor.
  return (1.0 - 2.0 * negative.to(torch::kFloat32)) * torch::stack(scales).view({world, 1, 1});
}

torch::Tensor SparseCodec::decode(const SparsePayload& payload) const {
  torch::NoGradGuard no_grad;
  const std::vector<SparsePayload> one = {payload};
  torch::Tensor dense = torch::zeros({chunks_, chunk_numel_}, payload.values.options().dtype(torch::kFloat32));
  return dense.scatter_(1, positions(one)[0], values_fp32(one)[0]);
}

torch::Tensor SparseCodec::mean_decode(const std::vector<SparsePayload>& by_rank) const {
  torch::NoGradGuard no_grad;
  const int64_t world = static_cast<int64_t>(by_rank.size());
  torch::Tensor pos = positions(by_rank);     // (K, chunks, k')
  torch::Tensor values = values_fp32(by_rank);  // (K, chunks, k')
  const torch::TensorOptions fp32 = values.options().dtype(torch::kFloat32);
  torch::Tensor sum = torch::zeros({chunks_, chunk_numel_}, fp32);
  // One scatter_add per rank, in rank order: a position appears at most once per chunk in a payload,
  // so every element receives one addition per rank and the fp32 sum's order is the rank order.
  for (int64_t r = 0; r < world; ++r) sum.scatter_add_(1, pos[r], values[r]);
  // Senders per coefficient: small integers, exact in fp32 in any order.
  torch::Tensor count = torch::zeros({chunks_, chunk_numel_}, fp32);
  count.scatter_add_(1, pos.permute({1, 0, 2}).reshape({chunks_, world * k_}), torch::ones({chunks_, world * k_}, fp32));
  return sum.div_(count.clamp_min(1));
}

}  // namespace locosim
