// The one training loop every policy runs in, on every backend: for each step, draw a batch,
// compute the loss and gradients (charged as compute time), let the policy update, record.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>

#include "algorithms/optim.hpp"
#include "algorithms/policy.hpp"
#include "algorithms/recorder.hpp"
#include "algorithms/train_config.hpp"
#include "models/corpus.hpp"
#include "models/llama.hpp"

namespace locosim {

// Mean cross-entropy of `model` on the first `batches` batches of a held-out split (no gradients, no
// time charged).
double evaluate(TinyLlama& model, const Corpus& corpus, int64_t batches, int64_t batch_size,
                Split split = Split::test);

// One worker's work, split by what became of it (the summary's goodput and compute wasted).
struct WorkTally {
  int64_t tokens_trained = 0;       // every step's tokens, kept or not
  int64_t tokens_committed = 0;     // tokens of steps whose work reached a committed sync (or the end)
  double compute_wasted_s = 0;      // compute thrown away: aborted syncs, work lost with the worker
  int64_t syncs_committed = 0;
  int64_t syncs_aborted = 0;
  // Since the last committed sync: thrown away if the next one aborts or the worker is lost.
  int64_t tokens_pending = 0;
  double compute_pending_s = 0;
  double pending_since_s = 0;
};

class TrainLoop {
 public:
  // flops_per_step: compute charged per step (forward + backward of batch_size·seq_len tokens).
  TrainLoop(TinyLlama model, Shard shard, const Corpus& corpus, Policy& policy, Transport& transport,
            const TrainConfig& cfg, double flops_per_step, Recorder& recorder);

  // Runs steps from first_step until the last one: train.steps, or where the policy ends the run
  // (Policy::ends_itself). 0 from the start; a worker that joins mid-run starts where the group is,
  // after the policy's load().
  void run(int64_t first_step = 0);
  // Steps completed so far.
  int64_t steps_done() const { return steps_done_; }
  // Whether run() completed its last step (a worker lost mid-run has not).
  bool finished() const { return finished_; }
  const WorkTally& tally() const { return tally_; }
  // This worker's model now, scored on a held-out split (after the run: the validation loss tuning
  // chooses on; no time charged).
  double evaluate_on(Split split) { return evaluate(model_, corpus_, cfg_.eval_batches, cfg_.batch_size, split); }

  // The worker was lost at `now_s` (its host failed): the work since its last committed sync, the
  // step it was computing included, is thrown away and recorded as a `discard` event.
  void lose(double now_s);

  // Called after each sync (committed or aborted) at which the policy can hand its state over
  // (handover_ready), with the number of steps done: where the world admits joiners. May be empty.
  std::function<void(int64_t steps_done)> on_handover_point;

  // Timing only (numerics: none): the parameters the policy updates, on torch's meta device (shapes,
  // no values); the model is not touched. A step draws no batch and runs no forward or backward (run()
  // gives these parameters gradients of their shapes once, and no policy clears them), nothing is
  // evaluated, and the losses are NaN. The policy and the transport run as in a full run. Empty: a
  // full run.
  std::vector<torch::Tensor> timing_params;

 private:
  void settle(Sync sync, double now_s);
  bool over(int64_t steps_done) const;
  TinyLlama model_;
  Shard shard_;
  const Corpus& corpus_;
  Policy& policy_;
  Transport& transport_;
  const TrainConfig& cfg_;
  double flops_per_step_;
  Recorder& recorder_;
  torch::Device device_;  // the model's (runtime.device): batches go there
  int64_t steps_done_ = 0;
  bool finished_ = false;
  WorkTally tally_;
  double computing_since_s_ = -1;  // >= 0 while a step's compute is being charged
};

}  // namespace locosim
