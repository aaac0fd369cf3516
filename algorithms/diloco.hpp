// DiLoCo (arXiv 2311.08105): H inner optimizer steps, then an outer step (Nesterov by default, SGD or
// Adam as the paper's Figure 6 ablates) on the averaged, optionally pruned, pseudo-gradient. Config
// defaults are the paper's.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/outer_config.hpp"
#include "algorithms/policy_registry.hpp"
#include "algorithms/train_config.hpp"
#include "algorithms/wire_format.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;

// How long a round lasts. `steps`: every worker does H inner steps (DiLoCo's rule; the fastest waits
// for the slowest). `fastest`: as long as the fastest member's H steps, measured each round.
// `seconds`: round_s.
enum class DiLoCoRound { steps, fastest, seconds };

// How the trimmed Δ_i of a pruned round are combined: the plain mean over the members (the paper's
// Table 6) or TIES's elected-sign disjoint mean (its appendix: "slightly worse").
enum class DiLoCoPruneMerge { mean, ties };

struct DiLoCoConfig {
  int64_t inner_steps = 500;            // H: inner steps between synchronisations
  DiLoCoRound round = DiLoCoRound::steps;
  double round_s = 0;                   // the round's length, read only with round: seconds
  // The outer optimizer: Alg. 1's Nesterov (η 0.7, μ 0.9), or sgd or adam as Figure 6 ablates (Adam's
  // betas are torch's defaults, the paper's were not retrieved; its ε 0.1: the paper's note: at 1e-8
  // every value would move by about η a round, whatever the size of its Δ).
  OuterConfig outer;
  // The fraction of each tensor's pseudo-gradient values a worker drops before sending (Table 6: 25%,
  // 50%, 75%): TIES trimming (outer_prune.hpp), then merged by prune_merge. 0: the plain all-reduce.
  double prune = 0;
  DiLoCoPruneMerge prune_merge = DiLoCoPruneMerge::mean;  // read (and recorded) with prune > 0 only
  WireFormat wire = WireFormat::fp32;   // pseudo-gradient on the wire (OpenDiLoCo: fp16)

  static DiLoCoConfig parse(Section& s);
};

std::unique_ptr<Policy> make_diloco(const DiLoCoConfig& cfg, PolicyContext ctx);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline DiLoCoConfig DiLoCoConfig::parse(Section& s) {
  DiLoCoConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  const std::string round = s.choice("round", {"steps", "fastest", "seconds"}, "steps");
  if (round == "fastest") c.round = DiLoCoRound::fastest;
  if (round == "seconds") {
    c.round = DiLoCoRound::seconds;
    // A round of a microsecond is no round; a year is past any run.
    c.round_s = s.number("round_s", std::nullopt, Range::closed(1e-6, 3.2e7));
  }
  c.outer = OuterConfig::parse(s, c.outer);
  c.prune = s.number("prune", c.prune, Range::closed_open(0, 1));
  if (c.prune > 0 && c.round != DiLoCoRound::steps) {
    // Both merges average the workers unweighted: they have no place for token weights.
    s.fail("prune", "needs round: steps (the pruned merge is not weighted by tokens), got round: " + round);
  }
  if (c.prune > 0) {
    if (s.choice("prune_merge", {"mean", "ties"}, "mean") == "ties") c.prune_merge = DiLoCoPruneMerge::ties;
  } else if (s.has("prune_merge")) {
    s.fail("prune_merge", "is read with prune > 0 only");
  }
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry diloco_policy() {
  return policy_entry<DiLoCoConfig>({
      .name = "diloco",
      .paper = "arXiv 2311.08105; OpenDiLoCo arXiv 2407.07852",
      .sync_period = [](const DiLoCoConfig& c) -> std::optional<SyncPeriod> { return SyncPeriod{"inner_steps", c.inner_steps}; },
      // Timed rounds: a round's steps come from measured step times.
      .reads_clock = [](const DiLoCoConfig& c) { return c.round != DiLoCoRound::steps; },
      .collective = [](const DiLoCoConfig& c) { return c.prune > 0 ? RoundCollective::all_gather : RoundCollective::all_reduce; },
      .handover = "at the end of a round: the outer parameters and momentum, the inner optimizer",
      .on_failed_collective = "redo the all-reduce among the survivors, up to 3 attempts; then the round is aborted: "
                              "every member restarts from the outer parameters",
      .bytes_per_round = "2(K−1)/K · P · b every H steps (pruned: an all-gather of the trimmed payload)",
      .example = "{name: diloco, inner_steps: 4, wire: fp16}",
  });
}

}  // namespace locosim
