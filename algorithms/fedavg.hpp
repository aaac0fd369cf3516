// FedAvg / Local SGD: H inner steps, then every worker takes the plain average of the parameters.
// Config defaults and the choice of H are explained in fedavg.cpp.
#pragma once
#include <memory>
#include <optional>

#include "algorithms/policy_registry.hpp"
#include "algorithms/train_config.hpp"
#include "algorithms/wire_format.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;

struct FedAvgConfig {
  // H: inner steps between averagings. 500 as DiLoCo (arXiv 2311.08105 §3), whose outer-optimizer
  // ablation runs FedAvg (outer SGD, lr 1) at H=500: the two then differ in the outer rule only.
  int64_t inner_steps = 500;
  WireFormat wire = WireFormat::fp32;  // the parameters themselves travel, so fp32 by default

  static FedAvgConfig parse(Section& s);
};

std::unique_ptr<Policy> make_fedavg(const FedAvgConfig& cfg, PolicyContext ctx);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline FedAvgConfig FedAvgConfig::parse(Section& s) {
  FedAvgConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry fedavg_policy() {
  return policy_entry<FedAvgConfig>({
      .name = "fedavg",
      .paper = "arXiv 1602.05629",
      .sync_period = [](const FedAvgConfig& c) -> std::optional<SyncPeriod> { return SyncPeriod{"inner_steps", c.inner_steps}; },
      .reads_clock = [](const FedAvgConfig&) { return false; },
      .collective = [](const FedAvgConfig&) { return RoundCollective::all_reduce; },
      .handover = "at the end of a round: the averaged parameters, the inner optimizer",
      .on_failed_collective = "redo the all-reduce among the survivors, up to 3 attempts; then the round is aborted: "
                              "members keep their own parameters until the next round",
      .bytes_per_round = "2(K−1)/K · P · b every H steps",
      .example = "{name: fedavg, inner_steps: 4}",
  });
}

}  // namespace locosim
