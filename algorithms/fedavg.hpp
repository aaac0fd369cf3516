// FedAvg / Local SGD: H inner steps, then every worker takes the plain average of the parameters.
// Config defaults and the choice of H are explained in fedavg.cpp.
#pragma once
#include <memory>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

struct FedAvgConfig {
  // H: inner steps between averagings. 500 as DiLoCo (arXiv 2311.08105 §3), whose outer-optimizer
  // ablation runs FedAvg (outer SGD, lr 1) at H=500: the two then differ in the outer rule only.
  int64_t inner_steps = 500;
  WireFormat wire = WireFormat::fp32;  // the parameters themselves travel, so fp32 by default

  static FedAvgConfig parse(Section& s);
};

std::unique_ptr<Policy> make_fedavg(const FedAvgConfig& cfg, PolicyContext ctx);

// Its registry entry (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry fedavg_policy();

}  // namespace locosim
