// SparseLoCo (Sarfi, Thérien, Lidin & Belilovsky 2025, arXiv 2508.15706): DiLoCo's rounds with the
// outer momentum replaced by each replica's error-feedback buffer, of which only a chunked top-k,
// quantized to 2 bits, is sent (all-gathered) and averaged. Defaults as the authors' deployed code
// (tplr-ai/templar hparams/hparams.json): H 30, β 0.95, α 1, 64 of each 64×64 block (1.56%), 4 levels.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/policy_registry.hpp"
#include "algorithms/train_config.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;

// How the kept values travel. q2: 2 bits each plus 4 fp32 levels per tensor (the paper's 2-bit
// quantization, the levels as tplr's _quantize_values makes them). fp32: as they are (no quantization:
// the paper's ablation, and an identity with DiLoCo when every value is kept).
enum class SparseLoCoValues { q2, fp32 };

struct SparseLoCoConfig {
  int64_t inner_steps = 30;   // H (hparams.json inner_steps; the paper sweeps 15 .. 250)
  double outer_lr = 1.0;      // α: θ ← θ − α · mean of the sent updates (outer_learning_rate)
  double decay = 0.95;        // β: e ← β·e + Δ (momentum_decay)
  int64_t topk = 64;          // k: values sent per chunk (topk_compression)
  int64_t chunk = 64;         // s: 1-D chunks of s, matrices in s×s blocks (target_chunk: 64×64 = 4096)
  double quant_range = 6;     // the levels' span in standard deviations (quantization_range)
  SparseLoCoValues values = SparseLoCoValues::q2;

  static SparseLoCoConfig parse(Section& s);
};

std::unique_ptr<Policy> make_sparseloco(const SparseLoCoConfig& cfg, PolicyContext ctx);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline SparseLoCoConfig SparseLoCoConfig::parse(Section& s) {
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

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry sparseloco_policy() {
  return policy_entry<SparseLoCoConfig>({
      .name = "sparseloco",
      .paper = "arXiv 2508.15706; code: tplr-ai/templar",
      .sync_period = [](const SparseLoCoConfig& c) -> std::optional<SyncPeriod> { return SyncPeriod{"inner_steps", c.inner_steps}; },
      .reads_clock = [](const SparseLoCoConfig&) { return false; },
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
