// Policies on the in-process transport: identities that pin the update rules.
#include "algorithms/policies.hpp"

#include <torch/utils.h>

#include "algorithms/local_transport.hpp"
#include "algorithms/train_loop.hpp"
#include "config/section.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;

namespace {

const std::string kText = [] {
  std::string t;
  for (int i = 0; i < 400; ++i) t += "the quick brown fox jumps over the lazy dog. ";
  return t;
}();

PolicySpec spec_from(const std::string& yaml) {
  Section s = Section::load_string(yaml, "test.yaml");
  return parse_policy(s);
}

LlamaConfig tiny_config() {
  LlamaConfig cfg = LlamaConfig::preset("tiny");
  cfg.seq_len = 16;
  return cfg;
}

// Trains `spec` on K local workers for `steps` steps; returns rank 0's parameters and final eval losses.
struct Outcome {
  std::vector<torch::Tensor> params;
  double eval_loss_start = 0;
  double eval_loss_end = 0;
};

Outcome train(const PolicySpec& spec, int world, int steps, const OptimizerConfig& opt) {
  torch::set_num_threads(1);
  Corpus corpus = Corpus::from_text(kText, 0.1);
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

OptimizerConfig plain_sgd(double lr) {
  OptimizerConfig o;
  o.name = "sgd";
  o.lr = lr;
  o.weight_decay = 0;
  o.schedule = "constant";
  o.clip_norm = 0;
  return o;
}

double max_abs_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  return worst;
}

}  // namespace

TEST_CASE("policy entries parse with defaults and reject bad values") {
  PolicySpec d = spec_from("name: diloco\n");
  auto& c = std::get<DiLoCoConfig>(d.config);
  CHECK(c.inner_steps == 500);
  CHECK(c.outer_lr == doctest::Approx(0.7));
  CHECK(c.outer_momentum == doctest::Approx(0.9));
  CHECK(d.label == "diloco");
  CHECK_THROWS_WITH(spec_from("name: diloco\ninner_steps: 0\n"), doctest::Contains("inner_steps: must be >= 1"));
  CHECK_THROWS_WITH(spec_from("name: diloco\nwire: fp8\n"), doctest::Contains("wire: must be one of"));
  CHECK_THROWS_WITH(spec_from("name: sparta\n"), doctest::Contains("name: must be one of: ddp, diloco"));
  CHECK_THROWS_WITH(spec_from("name: ddp\ninner_steps: 3\n"), doctest::Contains("unknown key"));
}

TEST_CASE("DiLoCo with H=1, outer SGD lr 1, momentum 0 gives DDP's parameters under plain SGD") {
  const int world = 2, steps = 6;
  Outcome ddp = train(spec_from("name: ddp\n"), world, steps, plain_sgd(0.05));
  Outcome diloco = train(spec_from("name: diloco\ninner_steps: 1\nouter_lr: 1.0\nouter_momentum: 0.0\n"), world,
                         steps, plain_sgd(0.05));
  Outcome alone = train(spec_from("name: ddp\n"), 1, steps, plain_sgd(0.05));
  // θ − (θ − lr·g) is lr·g up to float rounding: equal within a few ulps of the parameters' size.
  CHECK(max_abs_diff(ddp.params, diloco.params) < 1e-6);
  // And the test can fail: the parameters did move, and differently from a single worker's.
  CHECK(max_abs_diff(ddp.params, alone.params) > 1e-4);
}

TEST_CASE("DiLoCo with momentum differs from DiLoCo without it") {
  Outcome a = train(spec_from("name: diloco\ninner_steps: 2\nouter_momentum: 0.0\n"), 2, 6, plain_sgd(0.05));
  Outcome b = train(spec_from("name: diloco\ninner_steps: 2\n"), 2, 6, plain_sgd(0.05));
  CHECK(max_abs_diff(a.params, b.params) > 1e-5);
}

TEST_CASE("the fp16 wire really rounds the pseudo-gradient") {
  Outcome f32 = train(spec_from("name: diloco\ninner_steps: 2\n"), 2, 4, plain_sgd(0.05));
  Outcome f16 = train(spec_from("name: diloco\ninner_steps: 2\nwire: fp16\n"), 2, 4, plain_sgd(0.05));
  double diff = max_abs_diff(f32.params, f16.params);
  CHECK(diff > 0);
  CHECK(diff < 1e-3);
}

TEST_CASE("each policy's loss falls on the test corpus") {
  OptimizerConfig adamw;
  adamw.lr = 3e-3;
  adamw.warmup_steps = 5;
  for (const char* yaml : {"name: ddp\n", "name: diloco\ninner_steps: 10\n"}) {
    CAPTURE(yaml);
    Outcome o = train(spec_from(yaml), 2, 60, adamw);
    CHECK(o.eval_loss_end < o.eval_loss_start - 1.5);
  }
}
