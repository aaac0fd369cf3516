// Streaming DiLoCo (arXiv 2501.18512): DiLoCo whose parameters are synchronised fragment by
// fragment, each fragment's all-reduce overlapping τ inner steps, on a 4-bit wire.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/policy_registry.hpp"
#include "algorithms/tensor_fwd.hpp"
#include "algorithms/train_config.hpp"
#include "algorithms/wire_format.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;

struct StreamingDiLoCoConfig {
  int64_t inner_steps = 100;            // H: steps between two syncs of the same fragment (the paper's H=100)
  int64_t fragments = 2;                // F: the paper uses fragments of ~3 layers; the tiny model has 2 layers.
                                        //    Clamped to the model's blocks (logged) when larger.
  int64_t sync_delay = 1;               // τ: inner steps between a fragment's all-reduce start and its use (overlapping communication)
  double merge_alpha = 0.5;             // α: θ_local ← α·θ_local + (1−α)·θ_global after the outer step
  double outer_lr = 0.4;                // η (0.4 in the paper's Streaming DiLoCo runs)
  double outer_momentum = 0.9;          // μ: Nesterov momentum
  bool nesterov = true;
  WireFormat wire = WireFormat::int4;   // 4-bit outer gradients, one fp32 scale per 64 (paper: E3M0, `wire: e3m0`)

  // Also checks torchft's schedule constraints: F divides H, τ < H/F.
  static StreamingDiLoCoConfig parse(Section& s);
};

// Transformer blocks in a parameter list laid out as TinyLlama registers it: the embedding, then L
// blocks whose parameters have the same shapes in the same order, then the final norm. Found from
// the shapes (the policy sees tensors, not names). Throws std::invalid_argument without that layout.
int64_t transformer_blocks(const std::vector<torch::Tensor>& params);

// Indices into params of each of F fragments, strided by layer (the paper's strided pattern): fragment p holds the blocks
// whose index is ≡ p (mod F); the embedding goes with fragment 0 (next to block 0), the final norm
// with the last block's fragment. REQUIRES: 1 <= fragments <= transformer_blocks(params).
std::vector<std::vector<size_t>> strided_fragments(const std::vector<torch::Tensor>& params, int64_t fragments);

std::unique_ptr<Policy> make_streaming_diloco(const StreamingDiLoCoConfig& cfg, PolicyContext ctx);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline StreamingDiLoCoConfig StreamingDiLoCoConfig::parse(Section& s) {
  StreamingDiLoCoConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  // At most one fragment per transformer block of the largest model (model.n_layers <= 512).
  c.fragments = s.integer("fragments", c.fragments, Range::closed(1, 512));
  c.sync_delay = s.integer("sync_delay", c.sync_delay, Range::non_negative());  // < H/F, checked below
  c.merge_alpha = s.number("merge_alpha", c.merge_alpha, Range::closed(0, 1));
  c.outer_lr = s.number("outer_lr", c.outer_lr, Range::open_closed(0, kMaxOuterLr));
  c.outer_momentum = s.number("outer_momentum", c.outer_momentum, Range::closed_open(0, 1));
  c.nesterov = s.flag("nesterov", c.nesterov);
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  // torchft's constraints: one fragment in flight at a time, each synced once per H steps.
  if (c.inner_steps % c.fragments != 0) {
    s.fail("fragments", "must divide inner_steps (" + std::to_string(c.inner_steps) + "), got " +
                            std::to_string(c.fragments));
  }
  const int64_t spacing = c.inner_steps / c.fragments;
  if (c.sync_delay >= spacing) {
    s.fail("sync_delay", "must be < inner_steps/fragments = " + std::to_string(spacing) +
                             " (a fragment is applied before the next one starts), got " +
                             std::to_string(c.sync_delay));
  }
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry streaming_diloco_policy() {
  return policy_entry<StreamingDiLoCoConfig>({
      .name = "streaming_diloco",
      .paper = "arXiv 2501.18512",
      // Every fragment is synced once per H steps; fragment 0 first at step H.
      .sync_period = [](const StreamingDiLoCoConfig& c) -> std::optional<SyncPeriod> {
        return SyncPeriod{"inner_steps", c.inner_steps};
      },
      .reads_clock = [](const StreamingDiLoCoConfig&) { return false; },
      .collective = [](const StreamingDiLoCoConfig&) { return RoundCollective::all_reduce; },
      .handover = "none: a fragment's sync is always in flight, so a lost worker stays out",
      .on_failed_collective = "the fragment's failed sync is skipped, not redone",
      .bytes_per_round = "2(K−1)/K · (P/F) · b per fragment sync, every H/F steps",
      .example = "{name: streaming_diloco, inner_steps: 4, fragments: 2, sync_delay: 1}",
  });
}

}  // namespace locosim
