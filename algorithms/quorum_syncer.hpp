// The quorum syncer of Decoupled DiLoCo (Douillard et al. 2026, "Decoupled DiLoCo for Resilient
// Distributed Pre-training", arXiv 2604.21428): learners never wait for the sync; a syncer merges the
// pushes that arrive within an adaptive grace window once a minimum quorum is in, weighted by tokens.
#pragma once
#include <memory>
#include <optional>

#include "algorithms/policy_registry.hpp"
#include "algorithms/tensor_fwd.hpp"
#include "algorithms/train_config.hpp"
#include "algorithms/wire_format.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;
class ParameterServer;

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

// The group's syncer, starting from θ = theta; the run's work is in once pushes hold workers ×
// total_steps inner steps. A push is the pseudo-gradient's tensors then [steps] (float64); a reply is
// θ's tensors then [version, done]. It runs its own windows (ParameterServer::arrive).
std::unique_ptr<ParameterServer> make_quorum_server(const QuorumSyncerConfig& cfg, const std::vector<torch::Tensor>& theta,
                                                    int workers, int64_t total_steps);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline QuorumSyncerConfig QuorumSyncerConfig::parse(Section& s) {
  QuorumSyncerConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  c.outer_lr = s.number("outer_lr", c.outer_lr, Range::open_closed(0, kMaxOuterLr));
  c.outer_momentum = s.number("outer_momentum", c.outer_momentum, Range::closed_open(0, 1));
  c.quorum = s.integer("quorum", c.quorum, Range::closed(0, 1 << 20));
  c.grace_factor = s.number("grace_factor", c.grace_factor, Range::closed(0, 1000));
  c.grace_max_s = s.number("grace_max_s", c.grace_max_s, Range::closed(0, 3.2e7));
  c.wait_for_merge = s.flag("wait_for_merge", c.wait_for_merge);
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry quorum_syncer_policy() {
  return policy_entry<QuorumSyncerConfig>({
      .name = "quorum_syncer",
      .paper = "arXiv 2604.21428",
      .sync_period = [](const QuorumSyncerConfig& c) -> std::optional<SyncPeriod> {
        return SyncPeriod{"inner_steps", c.inner_steps};
      },
      // Which pushes share a window depends on when they arrive.
      .reads_clock = [](const QuorumSyncerConfig&) { return true; },
      .collective = [](const QuorumSyncerConfig&) { return RoundCollective::server; },
      .handover = "none yet: a lost learner stays out",
      .on_failed_collective =
          "a failed push is not merged; the learner goes on from the model it last received and pushes again after its next H steps",
      .bytes_per_round = "P · b up and P · 4 down per push, through the syncer",
      // A quorum of both learners, each waiting for the merge: every window holds both pushes, merged
      // in rank order, so what the learners train does not depend on which push lands first.
      .example = "{name: quorum_syncer, inner_steps: 4, quorum: 2, wait_for_merge: true}",
  });
}

}  // namespace locosim
