// DeMo / DisTrO (Peng, Quesnelle & Kingma, arXiv 2411.19870): decoupled momentum, its fast DCT
// components shared by all-gather as sparse top-k, sign-SGD on their mean. Replaces the inner optimizer.
#pragma once
#include <memory>
#include <optional>

#include "algorithms/policy_registry.hpp"
#include "algorithms/sparse_format.hpp"
#include "algorithms/train_config.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;

struct DemoConfig {
  // η: peak step size of the sign-SGD update. DeMo replaces the inner optimizer, so η is the policy's
  // own (not train.optimizer.lr); it follows train.optimizer's warmup and decay shape, scaled to this
  // peak, as in the paper's OLMo runs (4e-4, cosine with warmup). Small models trained for few steps
  // usually want more: scenarios set it.
  double lr = 4e-4;
  double momentum_decay = 0.999;  // β: δ ← β·δ + η·g (demo.py compression_decay)
  int64_t topk = 32;              // k: DCT coefficients sent per chunk (compression_topk)
  int64_t chunk = 64;             // s: 1-D chunk length and 2-D block side (compression_chunk)
  double weight_decay = 0.0;      // decoupled: p ← p·(1 − η·wd) (demo.py default 0)
  SparseValues values = SparseValues::fp16;  // how kept coefficients travel: fp32 | fp16 | bf16 | sign (Psyche)
  // How their positions travel: packed (the smallest unsigned integer for a chunk position) | int64
  // (demo.py's torch.topk indices, as its all_gather sends them). Bytes only: the numerics are the same.
  SparseIndices indices = SparseIndices::packed;

  static DemoConfig parse(Section& s);
};

std::unique_ptr<Policy> make_demo(const DemoConfig& cfg, PolicyContext ctx);

// Bytes one worker uploads per step for parameters of these shapes, before Wire::scale:
// Σ over tensors of sparse_bytes(chunks, chunk_numel, k, values, indices).
double demo_payload_bytes(const DemoConfig& cfg, const std::vector<std::vector<int64_t>>& shapes);

// DeMo's own work per step, charged as compute (before Wire::scale, which prices the proxy model's
// parameters as the target's): `encode` before the all-gather, `decode` after it. Per element of a
// tensor's chunks (N: chunks × chunk_numel, the padding included) with blocks of r × c:
//   a chunked DCT or its inverse: 2(r + c) FLOPs (the two s×s matrix products of each block);
//   top-k: log2(k) comparisons, counted as FLOPs; the momentum update: 3 (decay, add, subtract);
//   encode = DCT + top-k + inverse DCT of what was sent + momentum; decode = inverse DCT of the
//   mean + the sign step (2).
// 768 FLOPs per parameter at chunk 64 (half a training step of 256 tokens): on a GPU a few ms.
struct DemoWork {
  double encode_flops = 0;
  double decode_flops = 0;
};
DemoWork demo_step_work(const DemoConfig& cfg, const std::vector<std::vector<int64_t>>& shapes);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline DemoConfig DemoConfig::parse(Section& s) {
  DemoConfig c;
  c.lr = s.number("lr", c.lr, Range::open_closed(0, kMaxLr));
  c.momentum_decay = s.number("momentum_decay", c.momentum_decay, Range::closed_open(0, 1));
  c.topk = s.integer("topk", c.topk, Range::at_least(1));  // <= chunk², checked below
  // s: each chunk side gets an s×s DCT basis; blocks are no larger than the model (d_model <= 16384).
  c.chunk = s.integer("chunk", c.chunk, Range::closed(1, 16384));
  c.weight_decay = s.number("weight_decay", c.weight_decay, Range::closed(0, kMaxWeightDecay));
  c.values = sparse_values_from_name(s.choice("values", sparse_values_names(), sparse_values_name(c.values)));
  c.indices = sparse_indices_from_name(s.choice("indices", sparse_indices_names(), sparse_indices_name(c.indices)));
  if (c.topk > c.chunk * c.chunk) {
    s.fail("topk", "must be <= chunk² = " + std::to_string(c.chunk * c.chunk) +
                       " (the coefficients of one chunk; more would send every chunk whole), got " +
                       std::to_string(c.topk));
  }
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry demo_policy() {
  return policy_entry<DemoConfig>({
      .name = "demo",
      .paper = "arXiv 2411.19870",
      .sync_period = [](const DemoConfig&) -> std::optional<SyncPeriod> { return std::nullopt; },
      .reads_clock = [](const DemoConfig&) { return false; },
      .collective = [](const DemoConfig&) { return RoundCollective::all_gather; },
      .handover = "after any step: the parameters and the momentum residual",
      .on_failed_collective = "proceed with the contributions that arrived: the step is committed on what the "
                              "survivors all hold",
      .bytes_per_round = "an all-gather of chunks · k · (b_idx + b_val) bytes, every step",
      .example = "{name: demo, lr: 1.0e-3, topk: 8, chunk: 16}",
  });
}

}  // namespace locosim
