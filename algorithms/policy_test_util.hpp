// Test helpers shared by the policy tests: train a policy on K in-process workers over a small
// repeated text and return rank 0's parameters and eval losses. Tests only (header-only).
#pragma once
#include <torch/utils.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/local_transport.hpp"
#include "algorithms/policies.hpp"
#include "algorithms/train_loop.hpp"
#include "config/section.hpp"

namespace locosim::policy_test {

inline const std::string& test_text() {
  static const std::string text = [] {
    std::string t;
    for (int i = 0; i < 400; ++i) t += "the quick brown fox jumps over the lazy dog. ";
    return t;
  }();
  return text;
}

inline PolicySpec spec_from(const std::string& yaml) {
  Section s = Section::load_string(yaml, "test.yaml");
  return parse_policy(s);
}

inline LlamaConfig tiny_config() {
  LlamaConfig cfg = LlamaConfig::preset("tiny");
  cfg.seq_len = 16;
  return cfg;
}

// Rank 0's parameters after training, and its eval losses before and after.
struct Outcome {
  std::vector<torch::Tensor> params;
  double eval_loss_start = 0;
  double eval_loss_end = 0;
};

// Trains `spec` on `world` local workers for `steps` steps (batch 4, seq_len 16, iid shards), every
// worker starting from the same weights (seed 7).
inline Outcome train(const PolicySpec& spec, int world, int steps, const OptimizerConfig& opt) {
  torch::set_num_threads(1);
  Corpus corpus = Corpus::from_text(test_text(), 0.1);
  torch::manual_seed(7);
  TinyLlama reference(tiny_config());
  TrainConfig train_cfg;
  train_cfg.steps = steps;
  train_cfg.batch_size = 4;
  train_cfg.eval_every = steps;
  train_cfg.eval_batches = 2;
  train_cfg.optimizer = opt;
  Outcome out;
  out.eval_loss_start = evaluate(reference, corpus, 2, 4);
  std::vector<Recorder> recorders(world);
  std::vector<std::vector<torch::Tensor>> finals(world);
  run_local_workers(world, [&](Transport& t) {
    TinyLlama model(tiny_config());
    {
      torch::NoGradGuard no_grad;
      auto mine = model->parameters();
      auto ref = reference->parameters();
      for (size_t i = 0; i < mine.size(); ++i) mine[i].copy_(ref[i]);
    }
    PolicyContext ctx{model->parameters(), &t, opt, steps, 1.0};
    auto policy = make_policy(spec, ctx);
    Shard shard(corpus, t.rank(), world, ShardMode::iid, 16, 3);
    TrainLoop loop(model, std::move(shard), corpus, *policy, t, train_cfg, 1.0, recorders[t.rank()]);
    loop.run();
    for (auto& p : model->parameters()) finals[t.rank()].push_back(p.detach().clone());
  });
  out.params = finals[0];
  out.eval_loss_end = recorders[0].metrics().back().eval_loss;
  return out;
}

inline OptimizerConfig plain_sgd(double lr) {
  OptimizerConfig o;
  o.name = "sgd";
  o.lr = lr;
  o.weight_decay = 0;
  o.schedule = "constant";
  o.clip_norm = 0;
  return o;
}

inline double max_abs_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  return worst;
}

}  // namespace locosim::policy_test
