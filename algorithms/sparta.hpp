// SPARTA (EXO Gym's `sparta` strategy): after every inner step the workers average a small random
// fraction p of each parameter tensor's values, the positions drawn from a seed every worker shares
// (no mask travels). And SPARTA with DiLoCo (EXO Gym's `sparta_diloco`): the same every step, plus a
// DiLoCo outer step every H steps. Defaults are EXO Gym's; choices where it is silent in sparta.cpp
// and docs/policies-sparta.md.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

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

// Their registry entries (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry sparta_policy();
PolicyEntry sparta_diloco_policy();

}  // namespace locosim
