// DeMo, Peng, Quesnelle & Kingma 2024 (arXiv 2411.19870), Algorithm 1, as bloc97/DeMo's demo.py runs
// it; the DisTrO report's optimizer family. Per step, per parameter tensor p with local gradient g:
//
//   p ← p·(1 − η·wd)                         decoupled weight decay
//   δ ← β·δ + η·g                            local momentum, never averaged
//   X ← DCT(δ) per chunk                     orthonormal DCT-II, 1-D chunks of s, s×s blocks
//   q ← top-k |X| per chunk                  (indices, values) on the wire
//   δ ← δ − IDCT(decode(q))                  the fast components leave δ; the rest stays (residual)
//   Q ← all_gather(q)                        every worker's payload
//   G ← IDCT(mean over workers of decode(Q)) per coefficient, over the workers that sent it
//   p ← p − η·sign(G)                        sign-SGD
//
// δ loses exactly what the receivers see (the values as the wire rounded them), so the wire's
// rounding error stays in δ and is sent later: error feedback. Wire per worker per step:
// Σ chunks·k·(b_idx + b_val), all-gathered (a full mesh: each worker uploads it K−1 times).
// demo.py's own wire (DeMo._demo_all_gather: per parameter, two all_gathers, torch.topk's int64
// indices and the values in the parameter's dtype, nothing else) is `indices: int64, values: fp32`.
#include "algorithms/demo.hpp"

#include <torch/types.h>  // first: clip_grad.h uses Tensor without including it

#include <torch/nn/utils/clip_grad.h>
#include <torch/utils.h>

#include <cmath>

#include "algorithms/dct.hpp"
#include "algorithms/policy.hpp"
#include "algorithms/sparse_codec.hpp"

namespace locosim {

double demo_payload_bytes(const DemoConfig& cfg, const std::vector<std::vector<int64_t>>& shapes) {
  double total = 0;
  for (const auto& shape : shapes) {
    ChunkLayout l = chunk_layout(shape, cfg.chunk);
    total += sparse_bytes(l.chunks(), l.chunk_numel(), cfg.topk, cfg.values, cfg.indices);
  }
  return total;
}

DemoWork demo_step_work(const DemoConfig& cfg, const std::vector<std::vector<int64_t>>& shapes) {
  DemoWork w;
  for (const auto& shape : shapes) {
    ChunkLayout l = chunk_layout(shape, cfg.chunk);
    const double n = static_cast<double>(l.chunks() * l.chunk_numel());
    const double transform = 2.0 * static_cast<double>(l.block_rows + l.block_cols);
    w.encode_flops += n * (2 * transform + std::log2(static_cast<double>(cfg.topk)) + 3);
    w.decode_flops += n * (transform + 2);
  }
  return w;
}

namespace {

class Demo : public Policy {
 public:
  Demo(const DemoConfig& cfg, PolicyContext ctx) : cfg_(cfg), ctx_(std::move(ctx)) {
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& p : ctx_.params) {
      shapes.push_back(p.sizes().vec());
      dcts_.emplace_back(shapes.back(), cfg_.chunk);
      const ChunkLayout& l = dcts_.back().layout();
      codecs_.emplace_back(l.chunks(), l.chunk_numel(), cfg_.topk, cfg_.values, cfg_.indices);
      deltas_.push_back(torch::zeros_like(p.detach()));
    }
    payload_bytes_ = demo_payload_bytes(cfg_, shapes);
    work_ = demo_step_work(cfg_, shapes);
  }

  Sync step(int64_t step) override {
    // η_t: train.optimizer's schedule shape, peaking at the policy's own η.
    const OptimizerConfig& opt = ctx_.optimizer;
    const double lr = cfg_.lr * scheduled_lr(opt, step, ctx_.total_steps) / opt.lr;

    std::vector<torch::Tensor> wire;  // per tensor: indices, values, scale
    ctx_.transport->compute(work_.encode_flops * ctx_.wire_scale, [&] {
      torch::NoGradGuard no_grad;  // scoped: released before the all-gather
      if (opt.clip_norm > 0) torch::nn::utils::clip_grad_norm_(ctx_.params, opt.clip_norm);
      for (size_t i = 0; i < ctx_.params.size(); ++i) {
        torch::Tensor p = ctx_.params[i].detach();
        torch::Tensor g = ctx_.params[i].grad();
        if (cfg_.weight_decay > 0) p.mul_(1.0 - lr * cfg_.weight_decay);
        deltas_[i].mul_(cfg_.momentum_decay);
        if (g.defined()) deltas_[i].add_(g, lr);
        SparsePayload q = codecs_[i].encode(dcts_[i].encode(deltas_[i]));
        deltas_[i].sub_(dcts_[i].decode(codecs_[i].decode(q)));
        q.append_to(wire);
      }
    });

    // A failed gather proceeds with the contributions that arrived (the members still alive):
    // the step is committed on what the survivors all hold, never skipped.
    std::vector<std::vector<torch::Tensor>> gathered;
    (void)ctx_.transport->all_gather(wire, payload_bytes_ * ctx_.wire_scale, gathered).wait();
    std::vector<const std::vector<torch::Tensor>*> arrived;
    for (const auto& g : gathered) {
      if (!g.empty()) arrived.push_back(&g);
    }

    ctx_.transport->compute(work_.decode_flops * ctx_.wire_scale, [&] {
      torch::NoGradGuard no_grad;
      std::vector<SparsePayload> by_rank(arrived.size());
      for (size_t i = 0; i < ctx_.params.size(); ++i) {
        for (size_t r = 0; r < arrived.size(); ++r) by_rank[r] = SparsePayload::from(*arrived[r], 3 * i);
        torch::Tensor g_mean = dcts_[i].decode(codecs_[i].mean_decode(by_rank));
        ctx_.params[i].detach().add_(g_mean.sign(), -lr);
      }
    });
    return Sync::committed;
  }

  // Parameters are identical on every member after each step; δ is each worker's own residual, so a
  // joiner starts with δ = 0 (it has no unsent momentum) and takes only the parameters.
  bool handover_ready() const override { return true; }
  void save(torch::serialize::OutputArchive& archive) const override { save_tensors(archive, "params", ctx_.params); }
  void load(torch::serialize::InputArchive& archive) override {
    load_tensors(archive, "params", ctx_.params);
    torch::NoGradGuard no_grad;
    for (auto& d : deltas_) d.zero_();
  }

 private:
  DemoConfig cfg_;
  PolicyContext ctx_;
  std::vector<ChunkedDct> dcts_;      // one per parameter tensor
  std::vector<SparseCodec> codecs_;   // one per parameter tensor
  std::vector<torch::Tensor> deltas_; // δ: the local momentum (residual), never communicated whole
  double payload_bytes_ = 0;          // this worker's upload per step, before wire_scale
  DemoWork work_;                     // its own compute per step, before wire_scale
};

}  // namespace

std::unique_ptr<Policy> make_demo(const DemoConfig& cfg, PolicyContext ctx) {
  return std::make_unique<Demo>(cfg, std::move(ctx));
}

}  // namespace locosim
