// The inner optimizer every policy trains with (AdamW, SGD or Muon), its learning-rate schedule and
// gradient clipping. One config, read from the scenario's train.optimizer.
#pragma once
#include <torch/optim.h>

#include <memory>
#include <string>
#include <vector>

#include "algorithms/train_config.hpp"

namespace locosim {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params,
                                                        const OptimizerConfig& cfg);

// Newton-Schulz FLOPs of one Muon step on `params` (0 unless cfg.name is muon); see algorithms/muon.hpp.
double optimizer_flops_per_step(const std::vector<torch::Tensor>& params, const OptimizerConfig& cfg);

// The learning rate at `step` (0-based) of `total_steps`.
double scheduled_lr(const OptimizerConfig& cfg, int64_t step, int64_t total_steps);

// Whether a step of `opt` would change nothing: parameters on the meta device (a timing-only run) have
// no values to update, so only the first step runs, to give the optimizer its state's shapes (what a
// joiner downloads), and not even that one where no joiner will read them (MetaStateUnread).
// optimizer_step and outer_step then return at once; a caller may skip its own work.
bool step_changes_nothing(const torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params);

// While one lives, the simulation is timing only on a world that never changes, where no worker joins:
// every optimizer steps parameters on the meta device, and nothing reads their state. So no step runs,
// not even the first (through LibTorch's dispatcher, the first steps were a quarter of a 10 000-worker
// run of two rounds). Not nested.
class MetaStateUnread {
 public:
  MetaStateUnread();
  ~MetaStateUnread();
  MetaStateUnread(const MetaStateUnread&) = delete;
  MetaStateUnread& operator=(const MetaStateUnread&) = delete;
};

// Sets the schedule's lr, clips the gradients and steps the optimizer (see step_changes_nothing).
void optimizer_step(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params,
                    const OptimizerConfig& cfg, int64_t step, int64_t total_steps);

// An outer optimizer's step (DiLoCo's Nesterov SGD) on parameters whose grad holds the pseudo-gradient
// (see step_changes_nothing).
void outer_step(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params);

}  // namespace locosim
