// train: and train.optimizer:, read strictly.
#include "algorithms/train_config.hpp"

#include <vector>

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

TrainConfig TrainConfig::parse(Section& s) {
  TrainConfig c;
  c.steps = s.integer("steps", c.steps, Range::closed(1, kMaxSteps));
  // Sequences per worker per step, trained for real: a larger batch is priced with timing.tokens_per_step.
  c.batch_size = s.integer("batch_size", c.batch_size, Range::closed(1, 65536));
  c.eval_every = s.integer("eval_every", c.eval_every, Range::closed(1, kMaxSteps));
  // Each evaluation runs this many batches for real (uncharged): 10000 is already hours on a CPU.
  c.eval_batches = s.integer("eval_batches", c.eval_batches, Range::closed(1, 10000));
  // Cross-entropy over 256 byte tokens starts near ln 256 ≈ 5.5; a target above 100 means nothing.
  if (s.has("target_loss")) c.target_loss = s.number("target_loss", std::nullopt, Range::open_closed(0, 100));
  Section opt = s.child("optimizer", /*optional=*/true);
  c.optimizer = OptimizerConfig::parse(opt);
  if (c.optimizer.warmup_steps >= c.steps) {
    opt.fail("warmup_steps", "must be < train.steps (" + std::to_string(c.steps) + "), got " +
                                 std::to_string(c.optimizer.warmup_steps) +
                                 ": the learning rate would never reach its peak");
  }
  s.finish();
  return c;
}

}  // namespace locosim
