// Measures the real cost the simulator pays per worker step: milliseconds per forward+backward+AdamW
// step of each model preset, with 1 and 2 LibTorch threads; then DeMo's own work per step (DCT,
// top-k, decode), measured against the training step and as the simulator charges it (FLOPs against
// the step's FLOPs). Prints figures, asserts nothing.
//   build/bench/step_bench [steps]
#include <torch/optim.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "algorithms/demo.hpp"
#include "algorithms/policies.hpp"
#include "algorithms/policy.hpp"
#include "models/corpus.hpp"
#include "models/llama.hpp"

using namespace locosim;

namespace {

// One worker alone: the all-gather returns its own payload; compute() times the policy's work.
class TimedAlone : public Transport {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Pending all_reduce_mean(std::vector<torch::Tensor>&, Wire) override { return Pending(); }
  Pending all_gather(const std::vector<torch::Tensor>& mine, double, std::vector<std::vector<torch::Tensor>>& out) override {
    out.assign(1, mine);
    return Pending();
  }
  void compute(double flops, const std::function<void()>& work) override {
    auto start = std::chrono::steady_clock::now();
    work();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    charged_flops += flops;
  }
  double now_s() const override { return 0; }
  double seconds = 0, charged_flops = 0;
};

// DeMo (defaults: chunk 64, k 32) on `preset`: its work's measured share of a training step next to
// the share the simulator charges.
void demo_work(const char* preset, const Corpus& corpus, int steps) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  LlamaConfig cfg = LlamaConfig::preset(preset);
  TinyLlama model(cfg);
  Shard shard(corpus, 0, 1, ShardMode::iid, static_cast<int>(cfg.seq_len), 1);
  const int batch = 8;
  TimedAlone transport;
  PolicySpec spec;
  spec.name = "demo";
  spec.label = "demo";
  spec.config = DemoConfig{};
  auto policy = make_policy(spec, PolicyContext{model->parameters(), &transport, OptimizerConfig{}, steps + 1, 1.0});
  double train_s = 0;
  for (int i = 0; i <= steps; ++i) {
    if (i == 1) transport.seconds = transport.charged_flops = 0;  // the first step warms up
    Batch b = shard.next(batch);
    auto start = std::chrono::steady_clock::now();
    model->zero_grad();
    model->loss(b.x_BT, b.y_BT).backward();
    if (i > 0) train_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    (void)policy->step(i);
  }
  const double step_flops = model->flops_per_token() * batch * static_cast<double>(cfg.seq_len);
  std::printf("%-6s %12.2f %12.2f %14.3f %14.3f\n", preset, 1000 * train_s / steps, 1000 * transport.seconds / steps,
              transport.seconds / train_s, transport.charged_flops / steps / step_flops);
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "the quick brown fox jumps over the lazy dog. ";
  Corpus corpus = Corpus::from_text(text, 0.1);
  std::printf("%-6s %7s %8s %10s %12s\n", "preset", "threads", "params", "ms/step", "tokens/s");
  for (const char* preset : {"tiny", "small", "base"}) {
    for (int threads : {1, 2}) {
      torch::set_num_threads(threads);
      torch::manual_seed(0);
      LlamaConfig cfg = LlamaConfig::preset(preset);
      TinyLlama model(cfg);
      torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
      Shard shard(corpus, 0, 1, ShardMode::iid, static_cast<int>(cfg.seq_len), 1);
      const int batch = 8;
      auto step = [&] {
        Batch b = shard.next(batch);
        opt.zero_grad();
        model->loss(b.x_BT, b.y_BT).backward();
        opt.step();
      };
      step();  // warm-up
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < steps; ++i) step();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / steps;
      std::printf("%-6s %7d %8lld %10.2f %12.0f\n", preset, threads, static_cast<long long>(model->num_params()), ms,
                  batch * cfg.seq_len / (ms / 1000));
    }
  }
  std::printf("\nDeMo's own work per step (1 thread): measured, and as charged (its FLOPs / the step's)\n");
  std::printf("%-6s %12s %12s %14s %14s\n", "preset", "train ms", "demo ms", "measured share", "charged share");
  for (const char* preset : {"tiny", "small", "base"}) demo_work(preset, corpus, steps);
  return 0;
}
