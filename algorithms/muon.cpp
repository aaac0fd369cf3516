// Muon with an auxiliary AdamW (algorithms/muon.hpp).
#include "algorithms/muon.hpp"

#include <torch/serialize/archive.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace locosim {

namespace {

std::string state_key(const torch::Tensor& p) { return c10::guts::to_string(p.unsafeGetTensorImpl()); }

torch::optim::OptimizerParamGroup group_of(std::vector<torch::Tensor> params,
                                           std::unique_ptr<torch::optim::OptimizerOptions> options) {
  return torch::optim::OptimizerParamGroup(std::move(params), std::move(options));
}

}  // namespace

torch::Tensor newton_schulz5(const torch::Tensor& G, int64_t steps) {
  TORCH_CHECK(G.dim() == 2, "newton_schulz5 takes a matrix, got ", G.dim(), " dimensions");
  torch::Tensor X = G.to(torch::kFloat32);  // the reference runs in bf16 on the GPU
  const bool tall = G.size(0) > G.size(1);
  if (tall) X = X.t();
  X = X / (X.norm() + 1e-7);  // Frobenius norm ≥ spectral norm: the singular values start in (0, 1]
  for (int64_t i = 0; i < steps; ++i) {
    torch::Tensor A = torch::mm(X, X.t());
    torch::Tensor B = kMuonNsB * A + kMuonNsC * torch::mm(A, A);
    X = kMuonNsA * X + torch::mm(B, X);
  }
  if (tall) X = X.t();
  return X;
}

std::vector<bool> muon_matrix_mask(const std::vector<torch::Tensor>& params) {
  std::vector<bool> mask(params.size(), false);
  for (size_t i = 1; i < params.size(); ++i) mask[i] = params[i].dim() == 2;
  return mask;
}

double newton_schulz_flops(int64_t rows, int64_t cols, int64_t steps) {
  const double n = static_cast<double>(std::min(rows, cols)), m = static_cast<double>(std::max(rows, cols));
  return static_cast<double>(steps) * (4 * n * n * m + 2 * n * n * n);
}

double muon_flops_per_step(const std::vector<torch::Tensor>& params, int64_t steps) {
  const std::vector<bool> mask = muon_matrix_mask(params);
  double flops = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (mask[i]) flops += newton_schulz_flops(params[i].size(0), params[i].size(1), steps);
  }
  return flops;
}

Muon::Muon(std::vector<torch::Tensor> matrices, std::vector<torch::Tensor> others, const MuonOptions& muon,
           const torch::optim::AdamWOptions& adamw)
    : Optimizer({group_of(matrices, std::make_unique<MuonOptions>(muon)),
                 group_of(others, std::make_unique<torch::optim::AdamWOptions>(adamw))},
                std::make_unique<MuonOptions>(muon)),
      adamw_(others, adamw) {
  for (const auto& p : matrices) TORCH_CHECK(p.dim() == 2, "Muon updates matrices, got ", p.dim(), " dimensions");
  TORCH_CHECK(muon.ns_steps >= 1, "Muon needs at least one Newton-Schulz step");
}

void Muon::set_lrs(double muon_lr, double adamw_lr) {
  param_groups_[0].options().set_lr(muon_lr);
  param_groups_[1].options().set_lr(adamw_lr);
}

torch::Tensor Muon::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  const auto& o = static_cast<const MuonOptions&>(param_groups_[0].options());
  for (const auto& p : param_groups_[0].params()) {
    if (!p.grad().defined()) continue;  // torch's optimizers skip these (the reference zero-fills them)
    auto& slot = state_[state_key(p)];
    if (!slot) {
      auto s = std::make_unique<MuonParamState>();
      s->momentum_buffer = torch::zeros_like(p, torch::MemoryFormat::Preserve);
      slot = std::move(s);
    }
    if (p.is_meta()) continue;  // timing only: the state has its shape, there is nothing to compute
    torch::Tensor& m = static_cast<MuonParamState&>(*slot).momentum_buffer;
    const torch::Tensor& g = p.grad();
    m.lerp_(g, 1 - o.momentum);
    torch::Tensor u = o.nesterov ? g.lerp(m, o.momentum) : m;
    u = newton_schulz5(u, o.ns_steps);
    u.mul_(std::sqrt(std::max(1.0, static_cast<double>(p.size(0)) / static_cast<double>(p.size(1)))));
    p.mul_(1 - o.lr * o.weight_decay);
    p.add_(u.to(p.scalar_type()), -o.lr);
  }
  // The other parameters: torch's AdamW with this group's lr.
  auto& adam_group = adamw_.param_groups()[0];
  adam_group.options().set_lr(param_groups_[1].options().get_lr());
  if (!adam_group.params().empty()) adamw_.step();
  return loss;
}

void Muon::save(torch::serialize::OutputArchive& archive) const {
  const auto& matrices = param_groups_[0].params();
  for (size_t i = 0; i < matrices.size(); ++i) {
    auto it = state_.find(state_key(matrices[i]));
    if (it == state_.end()) continue;
    archive.write("momentum_buffer_" + std::to_string(i),
                  static_cast<const MuonParamState&>(*it->second).momentum_buffer, /*is_buffer=*/true);
  }
  torch::serialize::OutputArchive adam;
  adamw_.save(adam);
  archive.write("adamw", adam);
}

void Muon::load(torch::serialize::InputArchive& archive) {
  state_.clear();
  const auto& matrices = param_groups_[0].params();
  for (size_t i = 0; i < matrices.size(); ++i) {
    torch::Tensor buffer;
    if (!archive.try_read("momentum_buffer_" + std::to_string(i), buffer, /*is_buffer=*/true)) continue;
    auto s = std::make_unique<MuonParamState>();
    s->momentum_buffer = buffer.to(matrices[i].device());
    state_[state_key(matrices[i])] = std::move(s);
  }
  torch::serialize::InputArchive adam;
  archive.read("adamw", adam);
  adamw_.load(adam);
}

}  // namespace locosim
