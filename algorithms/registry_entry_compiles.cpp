// Compiled by registry_compile_test.py only (not part of the build): a registry entry with every trait
// compiles; with -DOMIT_TRAIT, the same entry without `reads_clock` must not.
#include "algorithms/policy_registry.hpp"

namespace locosim {

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
      .make = [](const ExampleConfig&, PolicyContext) -> std::unique_ptr<Policy> { return nullptr; },
      .collective = [](const ExampleConfig&) { return RoundCollective::all_reduce; },
      .handover = "none",
      .on_failed_collective = "none",
      .bytes_per_round = "0",
      .example = "{name: example}",
  });
}

}  // namespace locosim
