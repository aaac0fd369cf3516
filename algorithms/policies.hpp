// A scenario's policy entry: parsed through the registry (policy_registry.hpp, policy_registry.cpp: no
// LibTorch), built for one worker (make_policy, policies.cpp: LibTorch). Adding a policy: its header
// (config, registry entry), its .cpp (the method, make_<name>) and a line in policy_list.hpp.
#pragma once
#include <any>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/policy_registry.hpp"

namespace locosim {

class Section;
class Policy;
struct PolicyContext;

struct PolicySpec {
  std::string name;    // the policy ("diloco")
  std::string label;   // the run's name in tables and folders ("diloco-h50"); defaults to name
  std::any config;     // the policy's Config (DiLoCoConfig for diloco): std::any_cast<const DiLoCoConfig&>
  // A point of an entry's `tune:` grid (scenario/scenario.cpp): the entry's label, and this point's
  // values (key, value as written). Empty for an entry without one.
  std::string tuned_from;
  std::vector<std::pair<std::string, std::string>> tune_values;

  const PolicyEntry& entry() const;  // REQUIRES: name is registered
};

// The registered policies' names, in registry order.
const std::vector<std::string>& policy_names();

// Reads one entry of the scenario's `policies:` list (name, optional label, the policy's keys).
// The label names a folder: it must be an identifier (see is_identifier in config/section.hpp).
PolicySpec parse_policy(Section& s);

// The policy's synchronization period (PolicyTraits::sync_period) as (key, steps). A period longer
// than train.steps would never synchronize: the scenario checks it (scenario/scenario.cpp).
std::optional<std::pair<std::string, int64_t>> sync_period(const PolicySpec& spec);

// Whether the policy's numbers depend on the clock (PolicyTraits::reads_clock): the others train the
// same values on any platform, so a sweep may re-time their runs (cli/run.hpp).
bool reads_clock(const PolicySpec& spec);

// The policy of one worker (policies.cpp; the only function here that needs LibTorch).
std::unique_ptr<Policy> make_policy(const PolicySpec& spec, PolicyContext ctx);

}  // namespace locosim
