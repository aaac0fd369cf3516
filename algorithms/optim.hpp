// The inner optimizer every policy trains with (AdamW, SGD or Muon), its learning-rate schedule and
// gradient clipping. One config, read from the scenario's train.optimizer.
#pragma once
#include <torch/optim.h>

#include <memory>
#include <string>
#include <vector>

namespace locosim {

class Section;

// Bounds shared by the scenario's step counts and step sizes (train.*, train.optimizer.*, policies).
// Each is far beyond any run that trains, and keeps a mistyped value from running for ever.
constexpr int64_t kMaxSteps = 10'000'000;  // train.steps, warmup_steps, every inner_steps (H, τ)
constexpr double kMaxLr = 10;              // peak step sizes (lr); 1e-3 is typical, 10 diverges already
constexpr double kMaxOuterLr = 10;         // outer step sizes (DiLoCo η 0.7, FedAvg 1)
constexpr double kMaxWeightDecay = 10;     // decoupled decay multiplies lr·wd: above 1/lr it zeroes the weights

struct OptimizerConfig {
  std::string name = "adamw";    // adamw | sgd (sgd: plain, for identity tests and FedAvg-style runs) |
                                 // muon (algorithms/muon.hpp: hidden matrices by Muon, the rest by AdamW)
  double lr = 1e-3;              // peak learning rate (muon: of the Muon matrices, 0.02 unless given)
  double weight_decay = 0.1;     // decoupled (AdamW, Muon); L2 for sgd
  double beta1 = 0.9;            // AdamW betas (0.9, 0.95) as in OpenDiLoCo; muon: of its AdamW part
  double beta2 = 0.95;
  double eps = 1e-8;
  double momentum = 0.0;         // sgd; muon (0.95 unless given)
  bool nesterov = true;          // muon only
  int64_t ns_steps = 5;          // muon only: Newton-Schulz iterations
  double adamw_lr = 1e-3;        // muon only: peak lr of the parameters AdamW updates (embedding, gains)
  int64_t warmup_steps = 0;      // linear warmup from 0 to lr
  std::string schedule = "cosine";  // cosine (to min_lr_ratio·lr at the last step) | constant
  double min_lr_ratio = 0.1;
  double clip_norm = 1.0;        // global gradient-norm clip; 0 disables

  static OptimizerConfig parse(Section& s);
};

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params,
                                                        const OptimizerConfig& cfg);

// Newton-Schulz FLOPs of one Muon step on `params` (0 unless cfg.name is muon); see algorithms/muon.hpp.
double optimizer_flops_per_step(const std::vector<torch::Tensor>& params, const OptimizerConfig& cfg);

// The learning rate at `step` (0-based) of `total_steps`.
double scheduled_lr(const OptimizerConfig& cfg, int64_t step, int64_t total_steps);

// Sets the schedule's lr, clips the gradients and steps the optimizer.
void optimizer_step(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params,
                    const OptimizerConfig& cfg, int64_t step, int64_t total_steps);

// An outer optimizer's step (DiLoCo's Nesterov SGD) on parameters whose grad holds the pseudo-gradient.
// On the meta device (timing only) only the first one runs: it gives the state its shapes (what a
// joiner downloads); the others would change nothing.
void outer_step(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params);

}  // namespace locosim
