// Streaming DiLoCo (arXiv 2501.18512): DiLoCo whose parameters are synchronised fragment by
// fragment, each fragment's all-reduce overlapping τ inner steps, on a 4-bit wire.
#pragma once
#include <memory>
#include <vector>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

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

// Its registry entry (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry streaming_diloco_policy();

}  // namespace locosim
