// SPARTA (EXO Gym's `sparta` strategy): after every inner step the workers average a small random
// fraction p of each parameter tensor's values, the positions drawn from a seed every worker shares
// (no mask travels). And SPARTA with DiLoCo (EXO Gym's `sparta_diloco`): the same every step, plus a
// DiLoCo outer step every H steps. Defaults are EXO Gym's; choices where it is silent in sparta.cpp
// and docs/policies-sparta.md.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/policy_registry.hpp"
#include "algorithms/train_config.hpp"
#include "algorithms/wire_format.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;

struct SpartaConfig {
  double p = 0.005;   // p_sparta: the fraction of each tensor's values averaged every step
  uint64_t seed = 0;  // the draw's (the same on every worker)
  WireFormat wire = WireFormat::fp32;  // the parameters themselves travel, as FedAvg's

  static SpartaConfig parse(Section& s);
};

struct SpartaDiLoCoConfig {
  SpartaConfig sparta;
  int64_t inner_steps = 100;    // H: EXO Gym's default for sparta_diloco
  double outer_lr = 0.7;        // DiLoCo's outer Nesterov SGD, EXO Gym's defaults
  double outer_momentum = 0.9;

  static SpartaDiLoCoConfig parse(Section& s);
};

// How many values of a tensor of `numel` values step `step` averages: ⌊p·numel⌋, plus one with
// probability frac(p·numel), drawn from (seed, step, tensor): each value is in with probability p, as
// in EXO Gym's Bernoulli mask, and the count never strays further than one from p·numel.
int64_t sparta_count(uint64_t seed, int64_t step, size_t tensor, int64_t numel, double p);
// The positions (into the flattened tensor, ascending, distinct) that step `step` averages of tensor
// number `tensor`: sparta_count of them, uniformly without replacement (Floyd's algorithm on
// mt19937_64, whose output the standard fixes: the same on every worker and platform).
std::vector<int64_t> sparta_indices(uint64_t seed, int64_t step, size_t tensor, int64_t numel, double p);

std::unique_ptr<Policy> make_sparta(const SpartaConfig& cfg, PolicyContext ctx);
std::unique_ptr<Policy> make_sparta_diloco(const SpartaDiLoCoConfig& cfg, PolicyContext ctx);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline SpartaConfig SpartaConfig::parse(Section& s) {
  SpartaConfig c;
  c.p = s.number("p", c.p, Range::open_closed(0, 1));
  c.seed = s.unsigned_integer("seed", c.seed);
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline SpartaDiLoCoConfig SpartaDiLoCoConfig::parse(Section& s) {
  SpartaDiLoCoConfig c;
  c.sparta = SpartaConfig::parse(s);
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  c.outer_lr = s.number("outer_lr", c.outer_lr, Range::open_closed(0, kMaxOuterLr));
  c.outer_momentum = s.number("outer_momentum", c.outer_momentum, Range::closed_open(0, 1));
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry sparta_policy() {
  return policy_entry<SpartaConfig>({
      .name = "sparta",
      .paper = "EXO Gym's sparta strategy (exo-explore/gym, exogym/strategy/sparta.py)",
      .sync_period = [](const SpartaConfig&) -> std::optional<SyncPeriod> { return std::nullopt; },
      .reads_clock = [](const SpartaConfig&) { return false; },
      .collective = [](const SpartaConfig&) { return RoundCollective::all_reduce; },
      .handover = "after any step: a peer's parameters and inner optimizer",
      .on_failed_collective = "redo the all-reduce among the survivors, up to 3 attempts; then the step's averaging is "
                              "skipped: members keep their own values",
      .bytes_per_round = "2(K−1)/K · Σ_t k_t · b every step, k_t = ⌊p·n_t⌋ or ⌈p·n_t⌉ (mean p·P)",
      .example = "{name: sparta, p: 0.05}",
  });
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry sparta_diloco_policy() {
  return policy_entry<SpartaDiLoCoConfig>({
      .name = "sparta_diloco",
      .paper = "EXO Gym's sparta_diloco strategy (exo-explore/gym, exogym/strategy/sparta_diloco.py)",
      // It communicates every step (SPARTA); H is its outer step's period only.
      .sync_period = [](const SpartaDiLoCoConfig&) -> std::optional<SyncPeriod> { return std::nullopt; },
      .reads_clock = [](const SpartaDiLoCoConfig&) { return false; },
      .collective = [](const SpartaDiLoCoConfig&) { return RoundCollective::all_reduce; },
      .handover = "after any step: a peer's parameters and inner optimizer, the outer parameters and momentum",
      .on_failed_collective = "redo each all-reduce among the survivors, up to 3 attempts; then SPARTA's averaging is "
                              "skipped (members keep their own values), an outer round aborted (every member restarts "
                              "from the outer parameters)",
      .bytes_per_round = "2(K−1)/K · Σ_t k_t · b every step, plus 2(K−1)/K · P · b every H steps",
      .example = "{name: sparta_diloco, p: 0.05, inner_steps: 4}",
  });
}

}  // namespace locosim
