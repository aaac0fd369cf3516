// DiLoCo (arXiv 2311.08105): H inner optimizer steps, then an outer step (Nesterov by default, SGD or
// Adam as the paper's Figure 6 ablates) on the averaged, optionally pruned, pseudo-gradient. Config
// defaults are the paper's.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "algorithms/local_sgd.hpp"
#include "algorithms/policy.hpp"
#include "algorithms/round_clock.hpp"

namespace locosim {

class Section;

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

// Its registry entry (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry diloco_policy();

}  // namespace locosim
