// Inner optimizer construction, schedule and step.
#include "algorithms/optim.hpp"

#include <torch/nn/utils/clip_grad.h>

#include <cmath>

#include "algorithms/muon.hpp"
#include "algorithms/torch_time.hpp"

namespace locosim {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params,
                                                        const OptimizerConfig& cfg) {
  if (cfg.name == "muon") {
    std::vector<torch::Tensor> matrices, others;
    const std::vector<bool> mask = muon_matrix_mask(params);
    for (size_t i = 0; i < params.size(); ++i) (mask[i] ? matrices : others).push_back(params[i]);
    MuonOptions muon;
    muon.lr = cfg.lr;
    muon.momentum = cfg.momentum;
    muon.nesterov = cfg.nesterov;
    muon.ns_steps = cfg.ns_steps;
    muon.weight_decay = cfg.weight_decay;
    return std::make_unique<Muon>(
        matrices, others, muon,
        torch::optim::AdamWOptions(cfg.adamw_lr).betas({cfg.beta1, cfg.beta2}).eps(cfg.eps).weight_decay(cfg.weight_decay));
  }
  if (cfg.name == "sgd") {
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(cfg.lr).momentum(cfg.momentum).weight_decay(cfg.weight_decay));
  }
  return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(cfg.lr)
                                                           .betas({cfg.beta1, cfg.beta2})
                                                           .eps(cfg.eps)
                                                           .weight_decay(cfg.weight_decay));
}

double optimizer_flops_per_step(const std::vector<torch::Tensor>& params, const OptimizerConfig& cfg) {
  return cfg.name == "muon" ? muon_flops_per_step(params, cfg.ns_steps) : 0.0;
}

double scheduled_lr(const OptimizerConfig& cfg, int64_t step, int64_t total_steps) {
  if (step < cfg.warmup_steps) return cfg.lr * static_cast<double>(step + 1) / static_cast<double>(cfg.warmup_steps);
  if (cfg.schedule == "constant") return cfg.lr;
  int64_t decay_steps = std::max<int64_t>(1, total_steps - cfg.warmup_steps);
  double progress = std::min(1.0, static_cast<double>(step - cfg.warmup_steps) / static_cast<double>(decay_steps));
  double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return cfg.lr * (cfg.min_lr_ratio + (1.0 - cfg.min_lr_ratio) * cosine);
}

static bool on_meta(const std::vector<torch::Tensor>& params) { return !params.empty() && params.front().is_meta(); }

// Set by a MetaStateUnread while it lives (a simulation runs on one thread, one at a time).
static bool meta_state_unread = false;

MetaStateUnread::MetaStateUnread() { meta_state_unread = true; }
MetaStateUnread::~MetaStateUnread() { meta_state_unread = false; }

bool step_changes_nothing(const torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params) {
  // Without reading the parameters or the optimizer: a swarm's workers are cold in the cache, and
  // these reads were 6 last-level misses of a relay member's round at 4096 workers.
  if (meta_state_unread) return true;
  return on_meta(params) && !opt.state().empty();
}

void optimizer_step(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params,
                    const OptimizerConfig& cfg, int64_t step, int64_t total_steps) {
  // A swarm's workers are visited thousands of times: return before touching the optimizer.
  if (step_changes_nothing(opt, params)) return;
  TorchTimer timer(torch_time().optimizer_ns);
  double lr = scheduled_lr(cfg, step, total_steps);
  for (auto& group : opt.param_groups()) group.options().set_lr(lr);
  if (auto* muon = dynamic_cast<Muon*>(&opt)) {
    OptimizerConfig adam = cfg;  // the same schedule, peaking at adamw_lr
    adam.lr = cfg.adamw_lr;
    muon->set_lrs(lr, scheduled_lr(adam, step, total_steps));
  }
  if (cfg.clip_norm > 0 && !on_meta(params)) torch::nn::utils::clip_grad_norm_(params, cfg.clip_norm);  // reads the norm's value
  opt.step();
}

void outer_step(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params) {
  if (step_changes_nothing(opt, params)) return;
  TorchTimer timer(torch_time().optimizer_ns);
  opt.step();
}

}  // namespace locosim
