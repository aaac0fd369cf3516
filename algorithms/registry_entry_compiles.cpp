// Compiled by registry_compile_test.py only (not part of the build): a registry entry with every trait
// compiles; with -DOMIT_TRAIT, the same entry without `reads_clock` must not. With -DLIST_WITHOUT_FACTORY,
// a policy listed (as policy_list.hpp lists them) without its make_<name> must not compile either.
#include <memory>

#include "algorithms/policy_registry.hpp"

namespace locosim {

class Policy;
struct PolicyContext;

struct ExampleConfig {
  static ExampleConfig parse(Section&) { return {}; }
};

PolicyEntry example_policy() {
  return policy_entry<ExampleConfig>({
      .name = "example",
      .paper = "none",
      .sync_period = [](const ExampleConfig&) -> std::optional<SyncPeriod> { return std::nullopt; },
#ifndef OMIT_TRAIT
      .reads_clock = [](const ExampleConfig&) { return false; },
#endif
      .collective = [](const ExampleConfig&) { return RoundCollective::all_reduce; },
      .handover = "none",
      .on_failed_collective = "none",
      .bytes_per_round = "0",
      .example = "{name: example}",
  });
}

#ifndef LIST_WITHOUT_FACTORY
std::unique_ptr<Policy> make_example(const ExampleConfig&, PolicyContext);
#endif

// The registry's and the factories' expansions of a list (policy_registry.cpp, policies.cpp).
#define EXAMPLE_POLICIES(X) X(example)
#define EXAMPLE_ENTRY(name) name##_policy(),
#define EXAMPLE_FACTORY(name) &make_##name,
const std::vector<PolicyEntry>& example_entries() {
  static const std::vector<PolicyEntry> entries = {EXAMPLE_POLICIES(EXAMPLE_ENTRY)};
  return entries;
}
const auto example_factories = {EXAMPLE_POLICIES(EXAMPLE_FACTORY)};

}  // namespace locosim
