// Muon (Jordan et al. 2024, github.com/KellerJordan/Muon muon.py): momentum orthogonalised by a
// quintic Newton-Schulz iteration for the hidden 2-D weight matrices, AdamW for every other parameter
// (the reference's SingleDeviceMuonWithAuxAdam). MuLoCo (Thérien et al. 2025, arXiv 2505.23725) is
// DiLoCo with it as the inner optimizer; here it is train.optimizer.name: muon, for every policy.
// docs/muon.md: what the reference does and what locosim does differently (fp32 on the CPU).
#pragma once
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <vector>

namespace locosim {

// The quintic's coefficients (a, b, c), chosen in the reference for the largest slope at zero.
constexpr double kMuonNsA = 3.4445, kMuonNsB = -4.7750, kMuonNsC = 2.0315;

// The reference's zeropower_via_newtonschulz5 on a 2-D G, in fp32 (the reference: bf16): X = G/(‖G‖_F +
// 1e-7), transposed while rows > cols, then `steps` times A = X Xᵀ, B = bA + cA², X = aX + BX.
torch::Tensor newton_schulz5(const torch::Tensor& G, int64_t steps);

// Which of `params` Muon updates: every 2-D parameter except the first of the list. TinyLlama
// registers its token embedding first, and it is also the (tied) output head: the reference leaves
// both embedding and head to AdamW. The policies pass model->parameters() in that order.
std::vector<bool> muon_matrix_mask(const std::vector<torch::Tensor>& params);

// FLOPs of one Muon step's Newton-Schulz iterations on the masked matrices: for each of shape (n, m),
// n <= m, each iteration costs X Xᵀ 2n²m + A·A 2n³ + B·X 2n²m = 4n²m + 2n³ (elementwise terms left out).
double newton_schulz_flops(int64_t rows, int64_t cols, int64_t steps);
double muon_flops_per_step(const std::vector<torch::Tensor>& params, int64_t steps);

struct MuonOptions : public torch::optim::OptimizerCloneableOptions<MuonOptions> {
  double lr = 0.02;
  double momentum = 0.95;
  bool nesterov = true;
  int64_t ns_steps = 5;
  double weight_decay = 0;  // decoupled: p ← p·(1 − lr·wd)
  double get_lr() const override { return lr; }
  void set_lr(const double value) override { lr = value; }
};

struct MuonParamState : public torch::optim::OptimizerCloneableParamState<MuonParamState> {
  torch::Tensor momentum_buffer;
};

// Param group 0: the matrices (MuonOptions); group 1: the others (AdamWOptions), stepped by an AdamW
// of its own so that their update is torch's AdamW exactly. state() holds the matrices' momenta.
class Muon : public torch::optim::Optimizer {
 public:
  Muon(std::vector<torch::Tensor> matrices, std::vector<torch::Tensor> others, const MuonOptions& muon,
       const torch::optim::AdamWOptions& adamw);

  // Each matrix: m ← lerp(m, g, 1−μ); u = lerp(g, m, μ) (nesterov) or m; u ← NS(u)·max(1, rows/cols)^½;
  // p ← p·(1 − lr·wd) − lr·u. On the meta device it only gives the state its shapes.
  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  // The two groups' learning rates (the schedule's, for the Muon lr and for adamw_lr).
  void set_lrs(double muon_lr, double adamw_lr);

 private:
  torch::optim::AdamW adamw_;
};

}  // namespace locosim
