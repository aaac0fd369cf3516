// DDP (data-parallel SGD/AdamW): every step, mean of the gradients over all workers, then one
// optimizer step on every replica. Replicas stay identical. Wire per worker per step: a ring
// all-reduce sends and receives 2(K-1)/K · P · b bytes.
#include "algorithms/ddp.hpp"

#include "config/section.hpp"

namespace locosim {

DdpConfig DdpConfig::parse(Section& s) {
  DdpConfig c;
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

namespace {

class Ddp : public Policy {
 public:
  Ddp(const DdpConfig& cfg, PolicyContext ctx)
      : cfg_(cfg), ctx_(std::move(ctx)), optimizer_(make_optimizer(ctx_.params, ctx_.optimizer)) {}

  // A failed all-reduce is redone among the survivors with the same gradients; if it keeps failing,
  // the step is skipped on every member (no replica applies a gradient the others did not).
  Sync step(int64_t step) override {
    std::vector<torch::Tensor> grads;
    for (auto& p : ctx_.params) grads.push_back(p.mutable_grad());
    const Wire wire{cfg_.wire, ctx_.wire_scale};
    if (!commit_or_redo([&] { return ctx_.transport->all_reduce_mean(grads, wire); })) return Sync::aborted;
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
  void load(torch::serialize::InputArchive& archive) override {
    load_tensors(archive, "params", ctx_.params);
    load_optimizer(archive, "optimizer", *optimizer_);
  }

 private:
  DdpConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

std::unique_ptr<Policy> make_ddp(const DdpConfig& cfg, PolicyContext ctx) {
  return std::make_unique<Ddp>(cfg, std::move(ctx));
}

}  // namespace locosim
