// The one training loop every policy runs in, on every backend: for each step, draw a batch,
// compute the loss and gradients (charged as compute time), let the policy update, record.
#pragma once
#include <cstdint>
#include <optional>

#include "algorithms/optim.hpp"
#include "algorithms/policy.hpp"
#include "algorithms/recorder.hpp"
#include "models/corpus.hpp"
#include "models/llama.hpp"

namespace locosim {

class Section;

struct TrainConfig {
  int64_t steps = 200;                 // optimizer steps per worker
  int64_t batch_size = 8;              // sequences per worker per step
  int64_t eval_every = 50;             // steps between evaluations (and always after the last step)
  int64_t eval_batches = 4;            // batches of the eval split per evaluation
  std::optional<double> target_loss;   // eval loss for the "time to target" column
  OptimizerConfig optimizer;           // the inner optimizer of every policy

  static TrainConfig parse(Section& s);
};

// Mean cross-entropy of `model` on the first `batches` eval batches (no gradients, no time charged).
double evaluate(TinyLlama& model, const Corpus& corpus, int64_t batches, int64_t batch_size);

class TrainLoop {
 public:
  // flops_per_step: compute charged per step (forward + backward of batch_size·seq_len tokens).
  TrainLoop(TinyLlama model, Shard shard, const Corpus& corpus, Policy& policy, Transport& transport,
            const TrainConfig& cfg, double flops_per_step, Recorder& recorder);

  void run();
  // Steps completed so far; equal to the configured steps once run() has returned.
  int64_t steps_done() const { return steps_done_; }
  bool finished() const { return steps_done_ == cfg_.steps; }

 private:
  TinyLlama model_;
  Shard shard_;
  const Corpus& corpus_;
  Policy& policy_;
  Transport& transport_;
  const TrainConfig& cfg_;
  double flops_per_step_;
  Recorder& recorder_;
  int64_t steps_done_ = 0;
};

}  // namespace locosim
