// SparseLoCo's codec and error feedback (see sparseloco_codec.hpp).
#include "algorithms/sparseloco_codec.hpp"

#include <torch/utils.h>

#include <cmath>

namespace locosim {

Quantized sparseloco_quantize(const torch::Tensor& kept, double quant_range) {
  torch::NoGradGuard no_grad;
  const torch::Tensor v = kept.to(torch::kFloat32).reshape({-1});
  const int64_t n = v.numel();
  const torch::TensorOptions fp32 = v.options();
  if (n == 0) return {torch::zeros({0}, fp32.dtype(torch::kLong)), torch::zeros({4}, fp32)};
  const torch::Tensor shift = v.mean();
  const torch::Tensor c = v - shift;
  // tplr: scale = range · (‖c‖ / √(n−1)) / bins, and 1 where that is 0, NaN or infinite (n = 1).
  const double sigma = c.norm().item<double>() / std::sqrt(static_cast<double>(n - 1));
  double step = static_cast<double>(static_cast<float>(quant_range * sigma / 4.0));
  if (step == 0 || !std::isfinite(step)) step = 1;
  const torch::Tensor codes = (c / step + 2.0).round().clamp(0, 3).to(torch::kLong);
  torch::Tensor sums = torch::zeros({4}, fp32).scatter_add_(0, codes, c);
  torch::Tensor counts = torch::zeros({4}, fp32).scatter_add_(0, codes, torch::ones({n}, fp32));
  torch::Tensor means = torch::where(counts > 0, sums / counts.clamp_min(1), torch::zeros({4}, fp32));
  return {codes, means + shift};
}

int sparseloco_index_bits(int64_t chunk_numel) {
  int bits = 0;
  while ((int64_t{1} << bits) < chunk_numel) ++bits;
  return bits;
}

double sparseloco_tensor_bytes(int64_t chunks, int64_t chunk_numel, int64_t k, SparseLoCoValues values) {
  const int64_t kept = std::min(k, chunk_numel);
  const int64_t pairs = chunks * kept;
  const int64_t b_idx = kept == chunk_numel ? 0 : sparseloco_index_bits(chunk_numel);
  const double indices = static_cast<double>((pairs * b_idx + 7) / 8);
  if (values == SparseLoCoValues::fp32) return indices + 4.0 * static_cast<double>(pairs);
  return indices + static_cast<double>((pairs * 2 + 7) / 8) + 16.0;
}

double sparseloco_payload_bytes(const SparseLoCoConfig& cfg, const std::vector<std::vector<int64_t>>& shapes) {
  double total = 0;
  for (const auto& shape : shapes) {
    const ChunkLayout l = chunk_layout(shape, cfg.chunk);
    total += sparseloco_tensor_bytes(l.chunks(), l.chunk_numel(), cfg.topk, cfg.values);
  }
  return total;
}

namespace {

// Values < 2^bits, bits each, least significant first, into ⌈n·bits/8⌉ bytes.
torch::Tensor pack(const torch::Tensor& values, int bits) {
  const int64_t n = values.numel();
  const torch::TensorOptions options = values.options().dtype(torch::kLong);
  torch::Tensor shifts = torch::arange(bits, options);
  torch::Tensor flat = torch::bitwise_and(values.reshape({n, 1}).to(torch::kLong).bitwise_right_shift(shifts), 1).reshape({-1});
  torch::Tensor padded = torch::zeros({(n * bits + 7) / 8 * 8}, options);
  padded.slice(0, 0, n * bits).copy_(flat);
  return (padded.view({-1, 8}).bitwise_left_shift(torch::arange(8, options))).sum(1).to(torch::kByte);
}

// The inverse of pack: n values of `bits` bits.
torch::Tensor unpack(const torch::Tensor& bytes, int64_t n, int bits) {
  const torch::TensorOptions options = bytes.options().dtype(torch::kLong);
  torch::Tensor flat = torch::bitwise_and(bytes.to(torch::kLong).reshape({-1, 1}).bitwise_right_shift(torch::arange(8, options)), 1)
                           .reshape({-1})
                           .slice(0, 0, n * bits);
  return flat.view({n, bits}).bitwise_left_shift(torch::arange(bits, options)).sum(1);
}

// x (the layout's shape) → (chunks, chunk_numel), zero-padded, block by block as ChunkedDct without the DCT.
torch::Tensor to_chunks(const ChunkLayout& l, const torch::Tensor& x) {
  torch::Tensor m = x.detach().to(torch::kFloat32).reshape({l.rows, l.cols});
  if (l.padded()) {
    m = torch::constant_pad_nd(m, {0, l.col_blocks * l.block_cols - l.cols, 0, l.row_blocks * l.block_rows - l.rows});
  }
  return m.view({l.row_blocks, l.block_rows, l.col_blocks, l.block_cols}).permute({0, 2, 1, 3}).reshape({l.chunks(), l.chunk_numel()});
}

torch::Tensor from_chunks(const ChunkLayout& l, const torch::Tensor& chunks) {
  torch::Tensor m = chunks.reshape({l.row_blocks, l.col_blocks, l.block_rows, l.block_cols})
                        .permute({0, 2, 1, 3})
                        .reshape({l.row_blocks * l.block_rows, l.col_blocks * l.block_cols});
  if (l.padded()) m = m.slice(0, 0, l.rows).slice(1, 0, l.cols);
  return m.contiguous().view(l.shape);
}

}  // namespace

SparseLoCoCodec::SparseLoCoCodec(const std::vector<int64_t>& shape, const SparseLoCoConfig& cfg)
    : layout_(chunk_layout(shape, cfg.chunk)),
      k_(std::min(cfg.topk, layout_.chunk_numel())),
      index_bits_(k_ == layout_.chunk_numel() ? 0 : sparseloco_index_bits(layout_.chunk_numel())),
      values_(cfg.values),
      quant_range_(cfg.quant_range) {}

std::vector<torch::Tensor> SparseLoCoCodec::encode(const torch::Tensor& x) const {
  torch::NoGradGuard no_grad;
  const int64_t pairs = layout_.chunks() * k_;
  const torch::TensorOptions bytes = x.options().dtype(torch::kByte), fp32 = x.options().dtype(torch::kFloat32);
  const int64_t index_bytes = (pairs * index_bits_ + 7) / 8;
  if (x.is_meta()) {  // timing only: the payload's sizes, no values
    if (values_ == SparseLoCoValues::fp32) {
      return {torch::empty({index_bytes}, bytes), torch::empty({pairs}, fp32), torch::empty({0}, fp32)};
    }
    return {torch::empty({index_bytes}, bytes), torch::empty({(pairs * 2 + 7) / 8}, bytes), torch::empty({4}, fp32)};
  }
  const torch::Tensor chunks = to_chunks(layout_, x);
  torch::Tensor kept, indices;
  if (index_bits_ == 0) {  // every value, in order: no positions on the wire
    kept = chunks;
    indices = torch::empty({0}, bytes);
  } else {
    const torch::Tensor pos = std::get<1>(torch::topk(chunks.abs(), k_, /*dim=*/1, /*largest=*/true, /*sorted=*/false));
    kept = chunks.gather(1, pos);
    indices = pack(pos, index_bits_);
  }
  if (values_ == SparseLoCoValues::fp32) return {indices, kept.reshape({-1}).clone(), torch::empty({0}, fp32)};
  const Quantized q = sparseloco_quantize(kept, quant_range_);
  return {indices, pack(q.codes, 2), q.levels};
}

torch::Tensor SparseLoCoCodec::decode(const std::vector<torch::Tensor>& wire, size_t first) const {
  torch::NoGradGuard no_grad;
  const torch::Tensor& indices = wire.at(first);
  const torch::Tensor& values = wire.at(first + 1);
  const torch::Tensor& levels = wire.at(first + 2);
  const int64_t chunks = layout_.chunks(), pairs = chunks * k_;
  const torch::TensorOptions fp32 = values.options().dtype(torch::kFloat32);
  torch::Tensor kept = values_ == SparseLoCoValues::fp32 ? values.to(torch::kFloat32)
                                                         : levels.to(torch::kFloat32).index_select(0, unpack(values, pairs, 2));
  kept = kept.view({chunks, k_});
  if (index_bits_ == 0) return from_chunks(layout_, kept);
  const torch::Tensor pos = unpack(indices, pairs, index_bits_).view({chunks, k_});
  return from_chunks(layout_, torch::zeros({chunks, layout_.chunk_numel()}, fp32).scatter_(1, pos, kept));
}

ErrorFeedback::ErrorFeedback(const std::vector<torch::Tensor>& like, const SparseLoCoConfig& cfg) : decay_(cfg.decay) {
  for (const auto& t : like) {
    codecs_.emplace_back(t.sizes().vec(), cfg);
    e_.push_back(torch::zeros_like(t.detach(), t.options().dtype(torch::kFloat32)));
  }
}

std::vector<torch::Tensor> ErrorFeedback::push(const std::vector<torch::Tensor>& delta, std::vector<torch::Tensor>& wire) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> sent;
  for (size_t i = 0; i < e_.size(); ++i) {
    const size_t first = wire.size();
    if (e_[i].is_meta()) {
      for (auto& t : codecs_[i].encode(e_[i])) wire.push_back(std::move(t));
      sent.push_back(e_[i]);
      continue;
    }
    e_[i].mul_(decay_).add_(delta[i]);
    for (auto& t : codecs_[i].encode(e_[i])) wire.push_back(std::move(t));
    sent.push_back(codecs_[i].decode(wire, first));
  }
  return sent;
}

void ErrorFeedback::commit(const std::vector<torch::Tensor>& sent) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < e_.size(); ++i) {
    if (!e_[i].is_meta()) e_[i].sub_(sent[i]);
  }
}

void ErrorFeedback::clear() {
  torch::NoGradGuard no_grad;
  for (auto& e : e_) {
    if (!e.is_meta()) e.zero_();
  }
}

double ErrorFeedback::bytes() const {
  double total = 0;
  for (const auto& c : codecs_) total += c.bytes();
  return total;
}

}  // namespace locosim
