// NoLoCo (arXiv 2506.10911): no global collective. Every H inner steps each worker averages its outer
// weights and pseudo-gradient with a small random group (pairs by default), and a modified Nesterov
// step pulls it toward the group's mean. Config defaults are the authors' released configs'.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

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

// Its registry entry (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry noloco_policy();

}  // namespace locosim
