// The scenario's `train:` section: the run's length and batches, the inner optimizer's settings
// (train.optimizer), and the bounds on step counts and step sizes. No LibTorch: the scenario loader
// reads them (optim.hpp builds the optimizer, train_loop.hpp trains).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

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

struct TrainConfig {
  int64_t steps = 200;                 // optimizer steps per worker
  int64_t batch_size = 8;              // sequences per worker per step
  int64_t eval_every = 50;             // steps between evaluations (and always after the last step)
  int64_t eval_batches = 4;            // batches of the eval split per evaluation
  std::optional<double> target_loss;   // eval loss for the "time to target" column
  OptimizerConfig optimizer;           // the inner optimizer of every policy

  static TrainConfig parse(Section& s);
};

}  // namespace locosim
