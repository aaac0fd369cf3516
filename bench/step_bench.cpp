// Measures the real cost the simulator pays per worker step: milliseconds per forward+backward+AdamW
// step of each model preset, with 1 and 2 LibTorch threads. Prints figures, asserts nothing.
//   build/bench/step_bench [steps]
#include <torch/optim.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "models/corpus.hpp"
#include "models/llama.hpp"

using namespace locosim;

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
  return 0;
}
