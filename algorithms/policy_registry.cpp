// The registry (policy_list.hpp) and a scenario's policy entries read through it. No LibTorch here.
#include "algorithms/policy_registry.hpp"

#include <stdexcept>

#include "algorithms/policies.hpp"
#include "algorithms/policy_list.hpp"
#include "config/section.hpp"

namespace locosim {

const std::vector<PolicyEntry>& policy_registry() {
#define LOCOSIM_ENTRY(name) name##_policy(),
  static const std::vector<PolicyEntry> entries = {LOCOSIM_POLICIES(LOCOSIM_ENTRY)};
#undef LOCOSIM_ENTRY
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

const PolicyEntry& PolicySpec::entry() const {
  const PolicyEntry* e = find_policy(name);
  if (!e) throw std::logic_error("policy '" + name + "' is not registered");
  return *e;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PolicyEntry& e : policy_registry()) out.push_back(e.name);
    return out;
  }();
  return names;
}

PolicySpec parse_policy(Section& s) {
  PolicySpec spec;
  spec.name = s.choice("name", policy_names());
  spec.label = s.identifier("label", spec.name);
  spec.config = spec.entry().parse(s);
  s.finish();
  return spec;
}

std::optional<std::pair<std::string, int64_t>> sync_period(const PolicySpec& spec) {
  const std::optional<SyncPeriod> period = spec.entry().sync_period(spec.config);
  if (!period) return std::nullopt;
  return std::pair{period->key, period->steps};
}

bool reads_clock(const PolicySpec& spec) { return spec.entry().reads_clock(spec.config); }

}  // namespace locosim
