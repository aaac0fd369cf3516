// The quorum syncer of Decoupled DiLoCo (Douillard et al. 2026, "Decoupled DiLoCo for Resilient
// Distributed Pre-training", arXiv 2604.21428): learners never wait for the sync; a syncer merges the
// pushes that arrive within an adaptive grace window once a minimum quorum is in, weighted by tokens.
#pragma once
#include <memory>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

struct QuorumSyncerConfig {
  int64_t inner_steps = 24;         // H: each learner's inner steps per push (the paper's H = 24)
  double outer_lr = 0.7;            // η of the syncer's outer Nesterov step (DiLoCo's)
  double outer_momentum = 0.9;      // μ
  int64_t quorum = 0;               // q: distinct learners a window needs; 0: ⌈K/2⌉
  double grace_factor = 1;          // the grace window, in mean gaps between arrivals (see quorum_syncer.cpp)
  double grace_max_s = 0;           // a cap on the grace window; 0: none
  bool wait_for_merge = false;      // true: a learner waits until its push is merged (an ablation)
  WireFormat wire = WireFormat::fp32;  // the pseudo-gradient on the wire (the model comes back in fp32)

  static QuorumSyncerConfig parse(Section& s);
};

std::unique_ptr<Policy> make_quorum_syncer(const QuorumSyncerConfig& cfg, PolicyContext ctx);

// Its registry entry (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry quorum_syncer_policy();

// The group's syncer, starting from θ = theta; the run's work is in once pushes hold workers ×
// total_steps inner steps. A push is the pseudo-gradient's tensors then [steps] (float64); a reply is
// θ's tensors then [version, done]. It runs its own windows (ParameterServer::arrive).
std::unique_ptr<ParameterServer> make_quorum_server(const QuorumSyncerConfig& cfg, const std::vector<torch::Tensor>& theta,
                                                    int workers, int64_t total_steps);

}  // namespace locosim
