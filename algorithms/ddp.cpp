// DDP (data-parallel SGD/AdamW): every step, mean of the gradients over all workers, then one
// optimizer step on every replica. Replicas stay identical. Wire per worker per step: a ring
// all-reduce sends and receives 2(K-1)/K · P · b bytes.
//
// Timed as PyTorch DDP runs (Li et al. 2020, "PyTorch Distributed", VLDB; torch/nn/parallel/
// distributed.py and reducer.cpp): the gradients travel in buckets of about 25 MiB, the first 1 MiB,
// and a bucket's all-reduce starts while the backward pass is still producing the next ones. The
// forward pass is a third of the step's FLOPs and the backward two thirds (2N and 4N per token), and
// a bucket's gradients are ready once the backward has spent its share of parameters on them. The
// numbers do not depend on buckets: each element's mean is the same whichever collective carries it.
#include "algorithms/ddp.hpp"

#include "algorithms/policy.hpp"

namespace locosim {

std::vector<std::vector<size_t>> ddp_buckets(const std::vector<double>& bytes, const DdpConfig& cfg) {
  constexpr double kMiB = 1024.0 * 1024.0;
  std::vector<std::vector<size_t>> buckets;
  std::vector<size_t> open;
  double held = 0;
  for (size_t i = bytes.size(); i-- > 0;) {
    open.push_back(i);
    held += bytes[i];
    const double cap = (buckets.empty() ? cfg.first_bucket_mb : cfg.bucket_mb) * kMiB;
    if (held >= cap) {
      buckets.push_back(std::move(open));
      open.clear();
      held = 0;
    }
  }
  if (!open.empty()) buckets.push_back(std::move(open));
  return buckets;
}

namespace {

class Ddp : public Policy {
 public:
  Ddp(const DdpConfig& cfg, PolicyContext ctx)
      : cfg_(cfg), ctx_(std::move(ctx)), optimizer_(make_optimizer(ctx_.params, ctx_.optimizer)) {
    if (cfg_.overlap) {
      std::vector<double> bytes;  // priced fp32 parameters
      for (const auto& p : ctx_.params) bytes.push_back(4.0 * static_cast<double>(p.numel()) * ctx_.wire_scale);
      buckets_ = ddp_buckets(bytes, cfg_);
    } else {  // one all-reduce of every gradient after the backward
      buckets_.emplace_back();
      for (size_t i = 0; i < ctx_.params.size(); ++i) buckets_.back().push_back(i);
    }
    for (const auto& bucket : buckets_) {
      bucket_numel_.push_back(0);
      for (size_t i : bucket) bucket_numel_.back() += static_cast<double>(ctx_.params[i].numel());
      total_numel_ += bucket_numel_.back();
    }
    grads_.resize(buckets_.size());
  }

  // With overlap: the forward pass, then each bucket's share of the backward followed by the start of
  // its all-reduce (the real forward and backward run first: they take no simulated time).
  void compute_step(Transport& transport, double flops, const std::function<void()>& work) override {
    if (!cfg_.overlap) return Policy::compute_step(transport, flops, work);
    transport.compute(flops / 3, work);
    for (size_t b = 0; b < buckets_.size(); ++b) {
      transport.compute(flops * 2 / 3 * bucket_numel_[b] / total_numel_, [] {});
      start_bucket(b);
    }
  }

  // The buckets not started yet start now (all of them without overlap). A failed all-reduce is redone
  // among the survivors with the same gradients; if it keeps failing, the step is skipped on every
  // member (no replica applies a gradient the others did not).
  Sync step(int64_t step) override {
    for (size_t b = in_flight_.size(); b < buckets_.size(); ++b) start_bucket(b);
    std::vector<size_t> failed;
    for (size_t b = 0; b < in_flight_.size(); ++b) {
      if (!in_flight_[b].wait()) failed.push_back(b);
    }
    in_flight_.clear();
    const Wire wire{cfg_.wire, ctx_.wire_scale};
    for (size_t b : failed) {  // three attempts in all, the first of them already made
      if (!commit_or_redo([&] { return ctx_.transport->all_reduce_mean(grads_[b], wire); }, 2)) return Sync::aborted;
    }
    optimizer_step(*optimizer_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
    return Sync::committed;
  }

  // Replicas are identical after every committed step: a joiner takes the parameters and the
  // optimizer's state.
  bool handover_ready() const override { return true; }
  void save(torch::serialize::OutputArchive& archive) const override {
    save_tensors(archive, "params", ctx_.params);
    save_optimizer(archive, "optimizer", *optimizer_);
  }
  // A worker that comes back may have been lost with buckets in flight: those collectives are gone
  // (the group redid them without it), so it drops them and starts the next step afresh.
  void load(torch::serialize::InputArchive& archive) override {
    load_tensors(archive, "params", ctx_.params);
    load_optimizer(archive, "optimizer", *optimizer_);
    in_flight_.clear();
  }

 private:
  DdpConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  // Starts bucket b's all-reduce on this step's gradients (the next one in order).
  void start_bucket(size_t b) {
    grads_[b].clear();
    for (size_t i : buckets_[b]) grads_[b].push_back(ctx_.params[i].mutable_grad());
    in_flight_.push_back(ctx_.transport->all_reduce_mean(grads_[b], Wire{cfg_.wire, ctx_.wire_scale}));
  }

  std::vector<std::vector<size_t>> buckets_;      // parameter indices, in the order they are ready (one
                                                   // bucket of all of them without overlap)
  std::vector<double> bucket_numel_;
  double total_numel_ = 0;
  std::vector<std::vector<torch::Tensor>> grads_;  // this step's gradients, per bucket
  std::vector<Pending> in_flight_;                 // their all-reduces, started in compute_step
};

}  // namespace

std::unique_ptr<Policy> make_ddp(const DdpConfig& cfg, PolicyContext ctx) {
  return std::make_unique<Ddp>(cfg, std::move(ctx));
}

}  // namespace locosim
