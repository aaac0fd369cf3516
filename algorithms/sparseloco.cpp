// SparseLoCo, Sarfi, Thérien, Lidin & Belilovsky 2025 (arXiv 2508.15706), Algorithm 1: DiLoCo whose
// outer momentum is replaced by each replica's error-feedback buffer e_r, of which only a chunked
// top-k, quantized to 2 bits, travels. Defaults from the authors' deployed code (tplr-ai/templar
// c2397ac, hparams/hparams.json, src/tplr/neurons.py, src/tplr/compress.py); see
// docs/policies-sparseloco.md for where the paper, the code and locosim differ.
//
//   every step:        θ_r ← InnerOpt(θ_r, ∇L_r)
//   every H steps:     Δ_r ← θ − θ_r                        pseudo-gradient (Anchor)
//                      e_r ← β·e_r + Δ_r                    error feedback, decayed (replaces outer momentum)
//                      Δ̂_r ← Q(TopK(e_r))                   k largest |e| of each chunk, 2-bit levels per tensor
//                      e_r ← e_r − Δ̂_r                      what was not sent (and the rounding) stays
//                      Δ̄   ← (1/R) Σ_r Δ̂_r                  all-gather of the payloads, summed in rank order
//                      θ   ← θ − α·Δ̄;   θ_r ← θ             plain outer step: no outer momentum
//
// Chunks are DeMo's (algorithms/dct.hpp's chunk_layout, without the DCT): 1-D tensors in chunks of s,
// matrices in s×s blocks (64 → 4096 values, 64 kept: 1.56%). Wire per worker per round: an all-gather
// of Σ_tensors ⌈C·k'·b_idx/8⌉ + ⌈C·k'/4⌉ + 16 bytes (b_idx = ⌈log2 s²⌉: 12 bits at s = 64), the
// payload each worker uploads K−1 times on a mesh.
#include "algorithms/sparseloco.hpp"

#include <torch/serialize.h>
#include <torch/utils.h>

#include <cmath>

#include "algorithms/local_sgd.hpp"
#include "algorithms/policy.hpp"
#include "algorithms/sparseloco_codec.hpp"

namespace locosim {

namespace {

class SparseLoCo : public Policy {
 public:
  SparseLoCo(const SparseLoCoConfig& cfg, PolicyContext ctx)
      : cfg_(cfg),
        ctx_(std::move(ctx)),
        inner_(make_optimizer(ctx_.params, ctx_.optimizer)),
        anchor_(ctx_.params),
        feedback_(ctx_.params, cfg_) {}

  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
    return (step + 1) % cfg_.inner_steps == 0 ? synchronize() : Sync::none;
  }

  // After a round θ_r = θ on every member: a joiner takes θ and the donor's inner optimizer state, and
  // starts with e = 0 (the donor's e is the donor's own unsent part: copying it would send it twice).
  bool handover_ready() const override { return true; }
  void save(torch::serialize::OutputArchive& archive) const override {
    anchor_.save(archive, "global", "outer");
    save_optimizer(archive, "inner", *inner_);
  }
  void load(torch::serialize::InputArchive& archive) override {
    anchor_.load(archive, "global", "outer");
    load_optimizer(archive, "inner", *inner_);
    feedback_.clear();
    anchor_.restart(ctx_.params);
  }

 private:
  // Commit or redo: the all-gather is redone among the survivors (up to 3 attempts) and the outer step
  // averages the payloads of the members it completed with. A round given up leaves θ untouched and
  // commits nothing to e (what it would have sent stays there); every member restarts from θ.
  Sync synchronize() {
    const std::vector<torch::Tensor> delta = anchor_.pseudo_gradient(ctx_.params);  // Δ_r = θ − θ_r
    std::vector<torch::Tensor> wire;  // per tensor: packed positions, packed codes, levels
    const std::vector<torch::Tensor> sent = feedback_.push(delta, wire);
    std::vector<std::vector<torch::Tensor>> gathered;
    const bool committed = commit_or_redo([&] {
      gathered.clear();
      return ctx_.transport->all_gather(wire, feedback_.bytes() * ctx_.wire_scale, gathered);
    });
    if (committed) {
      feedback_.commit(sent);
      if (anchor_.values()) outer_step(gathered);
    }
    anchor_.restart(ctx_.params);
    return committed ? Sync::committed : Sync::aborted;
  }

  // θ ← θ − α · (1/R) Σ_r decode(payload_r), summed in fp32 in rank order over the R that arrived.
  void outer_step(const std::vector<std::vector<torch::Tensor>>& gathered) {
    torch::NoGradGuard no_grad;
    const auto& codecs = feedback_.codecs();
    for (size_t i = 0; i < codecs.size(); ++i) {
      torch::Tensor sum;
      int arrived = 0;
      for (const auto& g : gathered) {
        if (g.empty()) continue;
        torch::Tensor d = codecs[i].decode(g, 3 * i);
        sum = sum.defined() ? sum.add_(d) : d;
        ++arrived;
      }
      sum.div_(static_cast<double>(arrived));
      anchor_.theta()[i].sub_(sum.to(anchor_.theta()[i].scalar_type()), cfg_.outer_lr);
    }
  }

  SparseLoCoConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;
  Anchor anchor_;           // θ: identical on every worker; moved by the plain outer step above
  ErrorFeedback feedback_;  // e_r: this worker's own, never sent whole
};

}  // namespace

std::unique_ptr<Policy> make_sparseloco(const SparseLoCoConfig& cfg, PolicyContext ctx) {
  return std::make_unique<SparseLoCo>(cfg, std::move(ctx));
}

}  // namespace locosim
