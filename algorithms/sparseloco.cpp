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
#include "algorithms/policy_registry.hpp"
#include "config/section.hpp"

namespace locosim {

SparseLoCoConfig SparseLoCoConfig::parse(Section& s) {
  SparseLoCoConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  c.outer_lr = s.number("outer_lr", c.outer_lr, Range::open_closed(0, kMaxOuterLr));
  c.decay = s.number("decay", c.decay, Range::closed(0, 1));
  c.topk = s.integer("topk", c.topk, Range::at_least(1));  // <= chunk², checked below
  c.chunk = s.integer("chunk", c.chunk, Range::closed(1, 16384));
  c.quant_range = s.number("quant_range", c.quant_range, Range::open_closed(0, 1000));
  if (s.choice("values", {"q2", "fp32"}, "q2") == "fp32") c.values = SparseLoCoValues::fp32;
  if (c.topk > c.chunk * c.chunk) {
    s.fail("topk", "must be <= chunk² = " + std::to_string(c.chunk * c.chunk) +
                       " (the values of one chunk), got " + std::to_string(c.topk));
  }
  return c;
}

Quantized sparseloco_quantize(const torch::Tensor& kept, double quant_range) {
  torch::NoGradGuard no_grad;
  const torch::Tensor v = kept.to(torch::kFloat32).reshape({-1});
  const int64_t n = v.numel();
  const torch::TensorOptions fp32 = v.options();
  if (n == 0) return {torch::zeros({0}, fp32.dtype(torch::kLong)), torch::zeros({4}, fp32)};
  const torch::Tensor shift = v.mean();
  const torch::Tensor c = v - shift;
  // tplr: scale = range · (‖c‖ / √(n−1)) / bins, and 1 where that is 0, NaN or infinite (n = 1).
  const double sigma = c.norm().item<double>() / std::sqrt(static_cast<double>(n - 1));
  double step = static_cast<double>(static_cast<float>(quant_range * sigma / 4.0));
  if (step == 0 || !std::isfinite(step)) step = 1;
  const torch::Tensor codes = (c / step + 2.0).round().clamp(0, 3).to(torch::kLong);
  torch::Tensor sums = torch::zeros({4}, fp32).scatter_add_(0, codes, c);
  torch::Tensor counts = torch::zeros({4}, fp32).scatter_add_(0, codes, torch::ones({n}, fp32));
  torch::Tensor means = torch::where(counts > 0, sums / counts.clamp_min(1), torch::zeros({4}, fp32));
  return {codes, means + shift};
}

int sparseloco_index_bits(int64_t chunk_numel) {
  int bits = 0;
  while ((int64_t{1} << bits) < chunk_numel) ++bits;
  return bits;
}

double sparseloco_tensor_bytes(int64_t chunks, int64_t chunk_numel, int64_t k, SparseLoCoValues values) {
  const int64_t kept = std::min(k, chunk_numel);
  const int64_t pairs = chunks * kept;
  const int64_t b_idx = kept == chunk_numel ? 0 : sparseloco_index_bits(chunk_numel);
  const double indices = static_cast<double>((pairs * b_idx + 7) / 8);
  if (values == SparseLoCoValues::fp32) return indices + 4.0 * static_cast<double>(pairs);
  return indices + static_cast<double>((pairs * 2 + 7) / 8) + 16.0;
}

double sparseloco_payload_bytes(const SparseLoCoConfig& cfg, const std::vector<std::vector<int64_t>>& shapes) {
  double total = 0;
  for (const auto& shape : shapes) {
    const ChunkLayout l = chunk_layout(shape, cfg.chunk);
    total += sparseloco_tensor_bytes(l.chunks(), l.chunk_numel(), cfg.topk, cfg.values);
  }
  return total;
}

namespace {

// Values < 2^bits, bits each, least significant first, into ⌈n·bits/8⌉ bytes.
torch::Tensor pack(const torch::Tensor& values, int bits) {
  const int64_t n = values.numel();
  const torch::TensorOptions options = values.options().dtype(torch::kLong);
  torch::Tensor shifts = torch::arange(bits, options);
  torch::Tensor flat = torch::bitwise_and(values.reshape({n, 1}).to(torch::kLong).bitwise_right_shift(shifts), 1).reshape({-1});
  torch::Tensor padded = torch::zeros({(n * bits + 7) / 8 * 8}, options);
  padded.slice(0, 0, n * bits).copy_(flat);
  return (padded.view({-1, 8}).bitwise_left_shift(torch::arange(8, options))).sum(1).to(torch::kByte);
}

// The inverse of pack: n values of `bits` bits.
torch::Tensor unpack(const torch::Tensor& bytes, int64_t n, int bits) {
  const torch::TensorOptions options = bytes.options().dtype(torch::kLong);
  torch::Tensor flat = torch::bitwise_and(bytes.to(torch::kLong).reshape({-1, 1}).bitwise_right_shift(torch::arange(8, options)), 1)
                           .reshape({-1})
                           .slice(0, 0, n * bits);
  return flat.view({n, bits}).bitwise_left_shift(torch::arange(bits, options)).sum(1);
}

// x (the layout's shape) → (chunks, chunk_numel), zero-padded, block by block as ChunkedDct without the DCT.
torch::Tensor to_chunks(const ChunkLayout& l, const torch::Tensor& x) {
  torch::Tensor m = x.detach().to(torch::kFloat32).reshape({l.rows, l.cols});
  if (l.padded()) {
    m = torch::constant_pad_nd(m, {0, l.col_blocks * l.block_cols - l.cols, 0, l.row_blocks * l.block_rows - l.rows});
  }
  return m.view({l.row_blocks, l.block_rows, l.col_blocks, l.block_cols}).permute({0, 2, 1, 3}).reshape({l.chunks(), l.chunk_numel()});
}

torch::Tensor from_chunks(const ChunkLayout& l, const torch::Tensor& chunks) {
  torch::Tensor m = chunks.reshape({l.row_blocks, l.col_blocks, l.block_rows, l.block_cols})
                        .permute({0, 2, 1, 3})
                        .reshape({l.row_blocks * l.block_rows, l.col_blocks * l.block_cols});
  if (l.padded()) m = m.slice(0, 0, l.rows).slice(1, 0, l.cols);
  return m.contiguous().view(l.shape);
}

}  // namespace

SparseLoCoCodec::SparseLoCoCodec(const std::vector<int64_t>& shape, const SparseLoCoConfig& cfg)
    : layout_(chunk_layout(shape, cfg.chunk)),
      k_(std::min(cfg.topk, layout_.chunk_numel())),
      index_bits_(k_ == layout_.chunk_numel() ? 0 : sparseloco_index_bits(layout_.chunk_numel())),
      values_(cfg.values),
      quant_range_(cfg.quant_range) {}

std::vector<torch::Tensor> SparseLoCoCodec::encode(const torch::Tensor& x) const {
  torch::NoGradGuard no_grad;
  const int64_t pairs = layout_.chunks() * k_;
  const torch::TensorOptions bytes = x.options().dtype(torch::kByte), fp32 = x.options().dtype(torch::kFloat32);
  const int64_t index_bytes = (pairs * index_bits_ + 7) / 8;
  if (x.is_meta()) {  // timing only: the payload's sizes, no values
    if (values_ == SparseLoCoValues::fp32) {
      return {torch::empty({index_bytes}, bytes), torch::empty({pairs}, fp32), torch::empty({0}, fp32)};
    }
    return {torch::empty({index_bytes}, bytes), torch::empty({(pairs * 2 + 7) / 8}, bytes), torch::empty({4}, fp32)};
  }
  const torch::Tensor chunks = to_chunks(layout_, x);
  torch::Tensor kept, indices;
  if (index_bits_ == 0) {  // every value, in order: no positions on the wire
    kept = chunks;
    indices = torch::empty({0}, bytes);
  } else {
    const torch::Tensor pos = std::get<1>(torch::topk(chunks.abs(), k_, /*dim=*/1, /*largest=*/true, /*sorted=*/false));
    kept = chunks.gather(1, pos);
    indices = pack(pos, index_bits_);
  }
  if (values_ == SparseLoCoValues::fp32) return {indices, kept.reshape({-1}).clone(), torch::empty({0}, fp32)};
  const Quantized q = sparseloco_quantize(kept, quant_range_);
  return {indices, pack(q.codes, 2), q.levels};
}

torch::Tensor SparseLoCoCodec::decode(const std::vector<torch::Tensor>& wire, size_t first) const {
  torch::NoGradGuard no_grad;
  const torch::Tensor& indices = wire.at(first);
  const torch::Tensor& values = wire.at(first + 1);
  const torch::Tensor& levels = wire.at(first + 2);
  const int64_t chunks = layout_.chunks(), pairs = chunks * k_;
  const torch::TensorOptions fp32 = values.options().dtype(torch::kFloat32);
  torch::Tensor kept = values_ == SparseLoCoValues::fp32 ? values.to(torch::kFloat32)
                                                         : levels.to(torch::kFloat32).index_select(0, unpack(values, pairs, 2));
  kept = kept.view({chunks, k_});
  if (index_bits_ == 0) return from_chunks(layout_, kept);
  const torch::Tensor pos = unpack(indices, pairs, index_bits_).view({chunks, k_});
  return from_chunks(layout_, torch::zeros({chunks, layout_.chunk_numel()}, fp32).scatter_(1, pos, kept));
}

ErrorFeedback::ErrorFeedback(const std::vector<torch::Tensor>& like, const SparseLoCoConfig& cfg) : decay_(cfg.decay) {
  for (const auto& t : like) {
    codecs_.emplace_back(t.sizes().vec(), cfg);
    e_.push_back(torch::zeros_like(t.detach(), t.options().dtype(torch::kFloat32)));
  }
}

std::vector<torch::Tensor> ErrorFeedback::push(const std::vector<torch::Tensor>& delta, std::vector<torch::Tensor>& wire) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> sent;
  for (size_t i = 0; i < e_.size(); ++i) {
    const size_t first = wire.size();
    if (e_[i].is_meta()) {
      for (auto& t : codecs_[i].encode(e_[i])) wire.push_back(std::move(t));
      sent.push_back(e_[i]);
      continue;
    }
    e_[i].mul_(decay_).add_(delta[i]);
    for (auto& t : codecs_[i].encode(e_[i])) wire.push_back(std::move(t));
    sent.push_back(codecs_[i].decode(wire, first));
  }
  return sent;
}

void ErrorFeedback::commit(const std::vector<torch::Tensor>& sent) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < e_.size(); ++i) {
    if (!e_[i].is_meta()) e_[i].sub_(sent[i]);
  }
}

void ErrorFeedback::clear() {
  torch::NoGradGuard no_grad;
  for (auto& e : e_) {
    if (!e.is_meta()) e.zero_();
  }
}

double ErrorFeedback::bytes() const {
  double total = 0;
  for (const auto& c : codecs_) total += c.bytes();
  return total;
}

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

PolicyEntry sparseloco_policy() {
  return policy_entry<SparseLoCoConfig>({
      .name = "sparseloco",
      .paper = "arXiv 2508.15706; code: tplr-ai/templar",
      .sync_period = [](const SparseLoCoConfig& c) -> std::optional<SyncPeriod> { return SyncPeriod{"inner_steps", c.inner_steps}; },
      .reads_clock = [](const SparseLoCoConfig&) { return false; },
      .make = make_sparseloco,
      .collective = [](const SparseLoCoConfig&) { return RoundCollective::all_gather; },
      .handover = "at the end of a round: the outer parameters and the inner optimizer; the error feedback starts at 0",
      .on_failed_collective = "redo the all-gather among the survivors, up to 3 attempts, and average what they sent; "
                              "then the round is aborted: θ unchanged, the unsent update stays in each error feedback, "
                              "every member restarts from θ",
      .bytes_per_round = "an all-gather of Σ_t ⌈C_t·k·b_idx/8⌉ + ⌈C_t·k/4⌉ + 16 bytes every H steps "
                         "(C_t chunks of tensor t, b_idx = ⌈log2 s²⌉ bits; at k 64, s 64: 14 bits per 64 of 4096 values, about 0.7% of P·4)",
      .example = "{name: sparseloco, inner_steps: 4, topk: 8, chunk: 16}",
  });
}

}  // namespace locosim
