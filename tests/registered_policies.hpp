// Every registered policy in the cross-policy tests: a scenario's `policies:` block built from each
// policy's registry example (PolicyTraits::example), so a policy is in these tests once it is registered.
// A test that leaves one out names it in `except`, with its reason at the call.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "algorithms/policy_registry.hpp"

namespace locosim::testing {

inline std::vector<std::string> registered_policy_names(const std::set<std::string>& except = {}) {
  std::vector<std::string> out;
  for (const PolicyEntry& e : policy_registry()) {
    if (!except.count(e.name)) out.push_back(e.name);
  }
  return out;
}

// "policies:\n  - <example>\n..." for every registered policy not in `except`.
inline std::string registered_policies_block(const std::set<std::string>& except = {}) {
  std::string out = "policies:\n";
  for (const PolicyEntry& e : policy_registry()) {
    if (!except.count(e.name)) out += "  - " + e.example + "\n";
  }
  return out;
}

// `scenario` with its policies: block, which must be the last of the file, replaced by `block`.
inline std::string with_policies(const std::string& scenario, const std::string& block) {
  const size_t at = scenario.find("\npolicies:\n");
  if (at == std::string::npos) return scenario + block;
  return scenario.substr(0, at + 1) + block;
}

}  // namespace locosim::testing
