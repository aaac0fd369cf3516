// Inner optimizer construction, schedule and step.
#include "algorithms/optim.hpp"

#include <torch/nn/utils/clip_grad.h>

#include <cmath>

#include "algorithms/muon.hpp"
#include "algorithms/torch_time.hpp"
#include "config/section.hpp"

namespace locosim {

OptimizerConfig OptimizerConfig::parse(Section& s) {
  OptimizerConfig c;
  c.name = s.choice("name", {"adamw", "sgd", "muon"}, c.name);
  // muon: lr is the Muon matrices' (the reference's 0.02), adamw_lr the other parameters'.
  c.lr = s.number("lr", c.name == "muon" ? 0.02 : c.lr, Range::open_closed(0, kMaxLr));
  c.weight_decay =
      s.number("weight_decay", c.name == "sgd" ? 0.0 : c.weight_decay, Range::closed(0, kMaxWeightDecay));
  if (c.name == "adamw" || c.name == "muon") {
    std::vector<double> betas = s.numbers("betas", 2, std::vector<double>{c.beta1, c.beta2}, Range::closed_open(0, 1));
    c.beta1 = betas[0];
    c.beta2 = betas[1];
    c.eps = s.number("eps", c.eps, Range::open_closed(0, 1));  // divides by sqrt(v) + eps: 1e-8 is usual
  }
  if (c.name == "muon") {
    c.momentum = s.number("momentum", 0.95, Range::closed_open(0, 1));
    c.nesterov = s.flag("nesterov", c.nesterov);
    // Each iteration is three matrix products per matrix; the reference's 5 already orthogonalises.
    c.ns_steps = s.integer("ns_steps", c.ns_steps, Range::closed(1, 100));
    c.adamw_lr = s.number("adamw_lr", c.adamw_lr, Range::open_closed(0, kMaxLr));
  } else if (c.name == "sgd") {
    c.momentum = s.number("momentum", c.momentum, Range::closed_open(0, 1));
  }
  // < train.steps, checked by TrainConfig::parse (it knows the steps).
  c.warmup_steps = s.integer("warmup_steps", c.warmup_steps, Range::closed(0, kMaxSteps));
  c.schedule = s.choice("schedule", {"cosine", "constant"}, c.schedule);
  c.min_lr_ratio = s.number("min_lr_ratio", c.min_lr_ratio, Range::closed(0, 1));
  // 0 disables clipping; gradient norms of a model that trains are far below 1e6.
  c.clip_norm = s.number("clip_norm", c.clip_norm, Range::closed(0, 1e6));
  s.finish();
  return c;
}

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

void optimizer_step(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params,
                    const OptimizerConfig& cfg, int64_t step, int64_t total_steps) {
  TorchTimer timer(torch_time().optimizer_ns);
  double lr = scheduled_lr(cfg, step, total_steps);
  for (auto& group : opt.param_groups()) group.options().set_lr(lr);
  if (auto* muon = dynamic_cast<Muon*>(&opt)) {
    OptimizerConfig adam = cfg;  // the same schedule, peaking at adamw_lr
    adam.lr = cfg.adamw_lr;
    muon->set_lrs(lr, scheduled_lr(adam, step, total_steps));
  }
  // Parameters on the meta device (a timing-only run) have no values to update: one step gives the
  // optimizer its state's shapes (what a joiner downloads), and the others would change nothing.
  const bool meta = !params.empty() && params.front().is_meta();
  if (meta && !opt.state().empty()) return;
  if (cfg.clip_norm > 0 && !meta) torch::nn::utils::clip_grad_norm_(params, cfg.clip_norm);  // reads the norm's value
  opt.step();
}

void outer_step(torch::optim::Optimizer& opt, const std::vector<torch::Tensor>& params) {
  TorchTimer timer(torch_time().optimizer_ns);
  if (!params.empty() && params.front().is_meta() && !opt.state().empty()) return;
  opt.step();
}

}  // namespace locosim
