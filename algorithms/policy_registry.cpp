// The list of registered policies: one line per policy (its entry is in its own file).
#include "algorithms/policy_registry.hpp"

#include "algorithms/async_diloco.hpp"
#include "algorithms/co2.hpp"
#include "algorithms/ddp.hpp"
#include "algorithms/demo.hpp"
#include "algorithms/diloco.hpp"
#include "algorithms/eager_diloco.hpp"
#include "algorithms/fedavg.hpp"
#include "algorithms/noloco.hpp"
#include "algorithms/quorum_syncer.hpp"
#include "algorithms/sparseloco.hpp"
#include "algorithms/sparta.hpp"
#include "algorithms/streaming_diloco.hpp"

namespace locosim {

const std::vector<PolicyEntry>& policy_registry() {
  static const std::vector<PolicyEntry> entries = {
      ddp_policy(),
      diloco_policy(),
      demo_policy(),
      eager_diloco_policy(),
      streaming_diloco_policy(),
      co2_policy(),
      fedavg_policy(),
      async_diloco_policy(),
      quorum_syncer_policy(),
      noloco_policy(),
      sparta_policy(),
      sparta_diloco_policy(),
      sparseloco_policy(),
  };
  return entries;
}

std::string policy_table() {
  std::string out = "| policy | source | bytes per worker per round, each way | when a collective fails | a returning worker |\n";
  out += "|---|---|---|---|---|\n";
  for (const PolicyEntry& e : policy_registry()) {
    out += "| `" + e.name + "` | " + e.paper + " | " + e.bytes_per_round + " | " + e.on_failed_collective + " | " +
           e.handover + " |\n";
  }
  return out;
}

const PolicyEntry* find_policy(const std::string& name) {
  for (const PolicyEntry& e : policy_registry()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace locosim
