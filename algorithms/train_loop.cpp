// TrainLoop: the per-worker loop, written to read top to bottom like a SimGrid actor.
//
// Torch RAII guards (NoGradGuard) never span a Transport call: on the simulator every worker is a
// coroutine on one thread, and thread-local grad mode would leak from one worker into another.
#include "algorithms/train_loop.hpp"

#include <torch/utils.h>

#include <limits>

#include "algorithms/torch_time.hpp"

namespace locosim {

double evaluate(TinyLlama& model, const Corpus& corpus, int64_t batches, int64_t batch_size, Split split) {
  TorchTimer timer(torch_time().eval_ns);
  torch::NoGradGuard no_grad;
  const torch::Device device = model->parameters().at(0).device();
  double total = 0;
  for (int64_t b = 0; b < batches; ++b) {
    Batch batch = eval_batch(corpus, static_cast<int>(b), static_cast<int>(batch_size),
                             static_cast<int>(model->config().seq_len), split);
    total += model->loss(batch.x_BT.to(device), batch.y_BT.to(device)).item<double>();
  }
  return total / static_cast<double>(batches);
}

TrainLoop::TrainLoop(TinyLlama model, Shard shard, const Corpus& corpus, Policy& policy, Transport& transport,
                     const TrainConfig& cfg, double flops_per_step, Recorder& recorder)
    : model_(std::move(model)),
      shard_(std::move(shard)),
      corpus_(corpus),
      policy_(policy),
      transport_(transport),
      cfg_(cfg),
      flops_per_step_(flops_per_step),
      recorder_(recorder),
      device_(model_->parameters().at(0).device()) {}

void TrainLoop::run(int64_t first_step) {
  const int64_t tokens_per_step = cfg_.batch_size * model_->config().seq_len;
  steps_done_ = first_step;
  tally_.pending_since_s = transport_.now_s();
  for (auto& p : timing_params) {  // a timing-only run's gradients: of the parameters' shapes, made once
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
  }
  for (int64_t step = first_step; !over(step); ++step) {
    double train_loss = std::numeric_limits<double>::quiet_NaN();
    // What needs the clock between steps asks at_now(): where the transport runs a timing-only
    // worker's steps ahead, it answers once their time has passed.
    transport_.at_now([this](double now_s) { computing_since_s_ = now_s; });
    if (!timing_params.empty()) {  // no work to run
      policy_.compute_step(transport_, flops_per_step_, [] {});
    } else {
      Batch batch = shard_.next(static_cast<int>(cfg_.batch_size));
      policy_.compute_step(transport_, flops_per_step_, [&] {
        model_->zero_grad();
        torch::Tensor loss = model_->loss(batch.x_BT.to(device_), batch.y_BT.to(device_));
        loss.backward();
        train_loss = loss.item<double>();
      });
    }
    transport_.at_now([this](double now_s) {
      tally_.compute_pending_s += now_s - computing_since_s_;
      computing_since_s_ = -1;
    });
    tally_.tokens_trained += tokens_per_step;
    tally_.tokens_pending += tokens_per_step;
    const Sync sync = policy_.step(step);
    if (sync != Sync::none) settle(sync, transport_.now_s());

    const bool last = over(step + 1);
    if (last) {
      policy_.finish();
      settle(Sync::committed, transport_.now_s());  // what is left is in the final model
    }
    MetricRow row;
    row.worker = transport_.rank();
    row.step = step + 1;
    row.tokens = tally_.tokens_trained;
    row.sync = sync;
    row.last = last;
    row.train_loss = train_loss;
    if (timing_params.empty() && (last || (step + 1) % cfg_.eval_every == 0)) {
      row.eval_loss = evaluate(model_, corpus_, cfg_.eval_batches, cfg_.batch_size);
    }
    transport_.at_now([this, row](double now_s) mutable {
      row.time_s = now_s;
      recorder_.metric(row);
    });
    steps_done_ = step + 1;
    finished_ = last;
    // After a sync, committed or given up, the members hold the same state: a joiner may take it.
    if (sync != Sync::none && !last && on_handover_point && policy_.handover_ready()) {
      on_handover_point(steps_done_);
    }
  }
}

bool TrainLoop::over(int64_t steps_done) const {
  return policy_.ends_itself() ? policy_.done() : steps_done >= cfg_.steps;
}

void TrainLoop::settle(Sync sync, double now_s) {
  if (sync == Sync::none) return;
  if (sync == Sync::committed) {
    ++tally_.syncs_committed;
    tally_.tokens_committed += tally_.tokens_pending;
  } else {
    ++tally_.syncs_aborted;
    tally_.compute_wasted_s += tally_.compute_pending_s;
    recorder_.event({transport_.rank(), EventKind::discard, tally_.pending_since_s, now_s, 0, -1});
  }
  tally_.tokens_pending = 0;
  tally_.compute_pending_s = 0;
  tally_.pending_since_s = now_s;
}

void TrainLoop::lose(double now_s) {
  double wasted = tally_.compute_pending_s;
  if (computing_since_s_ >= 0) wasted += now_s - computing_since_s_;
  tally_.compute_wasted_s += wasted;
  recorder_.event({transport_.rank(), EventKind::discard, tally_.pending_since_s, now_s, 0, -1});
  tally_.tokens_pending = 0;
  tally_.compute_pending_s = 0;
  computing_since_s_ = -1;
}

}  // namespace locosim
