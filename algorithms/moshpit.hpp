// Moshpit SGD (Ryabinin, Gorbunov, Plokhotnyuk & Pekhimenko 2021, arXiv 2103.03239): Local SGD whose
// averaging is Moshpit All-Reduce. The workers sit in the cells of a d-dimensional grid of side M; each
// averaging round averages the parameters within the groups that differ along one axis only, and the
// axis turns from round to round. With M^d = K workers, d rounds give every worker the exact mean; a
// lost worker only shrinks its own group.
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

struct MoshpitConfig {
  int64_t inner_steps = 50;   // τ: local steps between averaging rounds (DiLoCo's scale; the paper's τ is
                              // its experiments' choice, not a default of the method)
  int64_t grid_dims = 2;      // d: the grid's dimensions (rounds to the exact mean on a full grid)
  int64_t grid_size = 0;      // M: cells along each axis; 0: the smallest M with M^d >= K
  WireFormat wire = WireFormat::fp32;  // the parameters themselves travel, as FedAvg's

  static MoshpitConfig parse(Section& s);
};

// The groups of averaging round `round` (0-based) among `world_size` ranks: rank r sits in cell r of
// the grid (its coordinates are r's digits in base M, the first axis fastest; the last axis is as long
// as the ranks need, so M^d < K puts more than M in its groups), and the groups are the ranks whose
// coordinates agree on every axis but round mod d, each in rank order. Every worker computes the same.
// grid_size 0 picks the smallest M with M^d >= world_size.
std::vector<std::vector<int>> moshpit_groups(int64_t round, int world_size, int64_t grid_dims, int64_t grid_size);
// The group of `rank` alone (its row along the round's axis), computed from its cell: what a worker
// needs each round, without building every group.
std::vector<int> moshpit_group(int64_t round, int rank, int world_size, int64_t grid_dims, int64_t grid_size);

std::unique_ptr<Policy> make_moshpit(const MoshpitConfig& cfg, PolicyContext ctx);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline MoshpitConfig MoshpitConfig::parse(Section& s) {
  MoshpitConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  // 2^16 cells at d = 16 already hold more workers than a platform may have.
  c.grid_dims = s.integer("grid_dims", c.grid_dims, Range::closed(1, 16));
  c.grid_size = s.integer("grid_size", c.grid_size, Range::closed(0, 1 << 20));
  if (c.grid_size == 1) s.fail("grid_size", "must be 0 (chosen from the workers) or at least 2: a side of 1 never averages");
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry moshpit_policy() {
  return policy_entry<MoshpitConfig>({
      .name = "moshpit",
      .paper = "arXiv 2103.03239",
      .sync_period = [](const MoshpitConfig& c) -> std::optional<SyncPeriod> { return SyncPeriod{"inner_steps", c.inner_steps}; },
      .reads_clock = [](const MoshpitConfig&) { return false; },
      .collective = [](const MoshpitConfig&) { return RoundCollective::subgroup_all_reduce; },
      .handover = "at the end of a round: the donor's parameters and inner optimizer (the workers' differ)",
      .on_failed_collective = "redo the all-reduce among the group's survivors, up to 3 attempts; then the round "
                              "is aborted: each member keeps its own parameters",
      .bytes_per_round = "2(M−1)/M · P · b every τ steps, among the group's hosts (M = its size)",
      .example = "{name: moshpit, inner_steps: 4}",
  });
}

}  // namespace locosim
