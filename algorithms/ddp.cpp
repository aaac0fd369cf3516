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

  void step(int64_t step) override {
    std::vector<torch::Tensor> grads;
    for (auto& p : ctx_.params) grads.push_back(p.mutable_grad());
    ctx_.transport->all_reduce_mean(grads, Wire{cfg_.wire, ctx_.wire_scale}).wait();
    optimizer_step(*optimizer_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
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
