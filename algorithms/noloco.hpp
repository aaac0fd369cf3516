// NoLoCo (arXiv 2506.10911): no global collective. Every H inner steps each worker averages its outer
// weights and pseudo-gradient with a small random group (pairs by default), and a modified Nesterov
// step pulls it toward the group's mean. Config defaults are the authors' released configs'.
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

struct NoLoCoConfig {
  int64_t inner_steps = 50;      // H: inner steps between outer steps
  int64_t group_size = 2;        // n: workers averaging together at each outer step
  double outer_lr = 0.7;         // β: step along the group's mean pseudo-gradient
  double outer_momentum = 0.5;   // α
  double pull = 0.7;             // γ: step toward the group's mean outer weights (the code's: β; default: outer_lr)
  uint64_t seed = 0;             // the group draw's (the same on every worker)
  WireFormat wire = WireFormat::fp32;

  static NoLoCoConfig parse(Section& s);
};

// The groups of outer step `t` among `world_size` ranks: a permutation drawn from (seed, t), cut into
// consecutive groups of n, each in rank order; the last one holds the remainder when n does not divide
// the world. Every worker draws the same.
std::vector<std::vector<int>> noloco_groups(uint64_t seed, int64_t t, int world_size, int64_t group_size);

std::unique_ptr<Policy> make_noloco(const NoLoCoConfig& cfg, PolicyContext ctx);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline NoLoCoConfig NoLoCoConfig::parse(Section& s) {
  NoLoCoConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  c.group_size = s.integer("group_size", c.group_size, Range::closed(1, 1 << 20));
  c.outer_lr = s.number("outer_lr", c.outer_lr, Range::open_closed(0, kMaxOuterLr));
  c.outer_momentum = s.number("outer_momentum", c.outer_momentum, Range::closed_open(0, 1));
  c.pull = s.number("pull", c.outer_lr, Range::closed(0, kMaxOuterLr));
  c.seed = s.unsigned_integer("seed", c.seed);
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry noloco_policy() {
  return policy_entry<NoLoCoConfig>({
      .name = "noloco",
      .paper = "arXiv 2506.10911; code: jkolehm/noloco",
      .sync_period = [](const NoLoCoConfig& c) -> std::optional<SyncPeriod> { return SyncPeriod{"inner_steps", c.inner_steps}; },
      .reads_clock = [](const NoLoCoConfig&) { return false; },
      .collective = [](const NoLoCoConfig&) { return RoundCollective::subgroup_all_reduce; },
      .handover = "at the end of an outer step: a peer's outer weights, momentum and inner optimizer",
      .on_failed_collective = "redo the group's all-reduce among its members still in the run, up to 3 attempts; "
                              "then the outer step is skipped: the worker restarts from its outer weights",
      .bytes_per_round = "2(n−1)/n · 2P · b every H steps, within a random group of n (pairs: 2P·b)",
      .example = "{name: noloco, inner_steps: 4}",
  });
}

}  // namespace locosim
