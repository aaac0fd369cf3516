// TIES pruning of the pseudo-gradient (see outer_prune.hpp): the trimmed payload and the sign-elected merge.
#include "algorithms/outer_prune.hpp"

#include <torch/utils.h>

#include <cmath>

namespace locosim {

namespace {

int64_t kept_of(int64_t numel, double prune) {
  return numel - static_cast<int64_t>(std::floor(prune * static_cast<double>(numel)));
}

double sparse_bytes_of(int64_t numel, int64_t kept, WireFormat format) {
  return static_cast<double>(kept * index_bytes(numel)) + wire_bytes(format, kept);
}

// x (flat fp32) in the wire format, and back.
torch::Tensor encode_values(const torch::Tensor& x, WireFormat format) {
  switch (format) {
    case WireFormat::fp32: return x.contiguous().clone();
    case WireFormat::fp16: return x.to(torch::kHalf).contiguous();
    case WireFormat::bf16: return x.to(torch::kBFloat16).contiguous();
    default: return encode_quantized(x, format);
  }
}

torch::Tensor decode_values(const torch::Tensor& bytes, WireFormat format, int64_t numel) {
  switch (format) {
    case WireFormat::fp32:
    case WireFormat::fp16:
    case WireFormat::bf16: return bytes.to(torch::kFloat32).reshape({numel});
    default: return decode_quantized(bytes, format, numel);
  }
}

}  // namespace

double prune_bytes(int64_t numel, double prune, WireFormat format) {
  const int64_t kept = kept_of(numel, prune);
  return std::min(sparse_bytes_of(numel, kept, format), wire_bytes(format, numel));
}

PruneCodec::PruneCodec(int64_t numel, double prune, WireFormat format)
    : numel_(numel),
      kept_(kept_of(numel, prune)),
      format_(format),
      sparse_(sparse_bytes_of(numel, kept_, format) < wire_bytes(format, numel)),
      top_k_(1, numel, kept_, SparseValues::fp32, SparseIndices::packed) {}

double PruneCodec::bytes() const {
  return sparse_ ? sparse_bytes_of(numel_, kept_, format_) : wire_bytes(format_, numel_);
}

void PruneCodec::encode(const torch::Tensor& delta, std::vector<torch::Tensor>& wire) const {
  torch::NoGradGuard no_grad;
  if (delta.is_meta()) {
    const auto meta_bytes = delta.options().dtype(torch::kByte);
    const double positions = sparse_ ? static_cast<double>(kept_ * index_bytes(numel_)) : 0.0;
    wire.push_back(torch::empty({static_cast<int64_t>(positions)}, meta_bytes));
    wire.push_back(torch::empty({static_cast<int64_t>(bytes() - positions)}, meta_bytes));
    return;
  }
  SparsePayload top = top_k_.encode(delta.detach().reshape({1, numel_}));
  if (sparse_) {
    wire.push_back(top.indices.reshape({-1}));
    wire.push_back(encode_values(top.values.reshape({-1}), format_));
  } else {
    wire.push_back(torch::empty({0}, delta.options().dtype(torch::kByte)));
    wire.push_back(encode_values(top_k_.decode(top).reshape({-1}), format_));
  }
}

torch::Tensor PruneCodec::decode(const std::vector<torch::Tensor>& wire, size_t first) const {
  torch::NoGradGuard no_grad;
  const torch::Tensor& positions = wire.at(first);
  const torch::Tensor& values = wire.at(first + 1);
  if (!sparse_) return decode_values(values, format_, numel_);
  SparsePayload top{positions.reshape({1, -1}), decode_values(values, format_, kept_).reshape({1, kept_}),
                    torch::empty({0}, values.options().dtype(torch::kFloat32))};
  return top_k_.decode(top).reshape({numel_});
}

torch::Tensor ties_merge(const std::vector<torch::Tensor>& trimmed) {
  torch::NoGradGuard no_grad;
  torch::Tensor sum = torch::zeros_like(trimmed.at(0));
  for (const auto& x : trimmed) sum.add_(x);
  torch::Tensor elected = sum.sign();
  // Counted in integers: a sum of ±1 in fp32 is exact only below 2^24 values.
  const double majority = elected.to(torch::kLong).sum().sign().item<double>();
  elected.masked_fill_(elected.eq(0), majority);
  torch::Tensor merged = torch::zeros_like(sum);
  torch::Tensor agreeing = torch::zeros_like(sum);  // small integers: exact in fp32
  for (const auto& x : trimmed) {
    const torch::Tensor agrees = (x * elected).gt(0);
    merged.add_(x * agrees);
    agreeing.add_(agrees);
  }
  return merged.div_(agreeing.clamp_min(1));
}

torch::Tensor mean_merge(const std::vector<torch::Tensor>& trimmed) {
  torch::NoGradGuard no_grad;
  torch::Tensor sum = torch::zeros_like(trimmed.at(0));
  for (const auto& x : trimmed) sum.add_(x);
  return sum.div_(static_cast<double>(trimmed.size()));
}

}  // namespace locosim
