// A scenario's `sweep:` block (schema in scenario/scenario.cpp): the grid of values it names, expanded
// into one validated Scenario per point. Not here: running them (cli/run.hpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenario/scenario.hpp"

namespace locosim {

struct SweepPoint {
  std::string name;                                          // folder: "bandwidth=10Mbps+inner_steps=50"
  std::vector<std::pair<std::string, std::string>> values;   // (sweep key, value as written), in key order
  Scenario scenario;                                         // the scenario with those values in place
  // At several seeds (Sweep::seeded): the grid point this seed belongs to ("" without a sweep), and
  // the seed; the name ends in "seed=<seed>" and `values` with ("seed", <seed>).
  std::string group;
  uint64_t seed = 0;
};

struct Sweep {
  std::vector<std::string> keys;   // in file order; "seed" last when seeded
  std::vector<SweepPoint> points;  // every combination, the first key varying slowest (the seed fastest)
  // The scenario runs at several training seeds (`seeds:` or --seeds): each grid point is a point per
  // seed, in the order of `seeds`, and the tables aggregate them (report/seed_table.hpp).
  bool seeded = false;
  std::vector<uint64_t> seeds;
  // Seeds asked of a timing-only scenario (numerics: none): its schedule cannot depend on the training
  // seed, so one run stands for all of them. 0: none were asked.
  size_t seeds_not_needed = 0;
};

// Reads `path` and expands its sweep; a scenario without one is a single point named "" with no keys.
// Every point is loaded (so validated) here, before anything runs. Throws ConfigError: for the file
// itself as load_scenario does; for a sweep key that names nothing, or a value (or combination) that
// the scenario rejects, at that value's position in the sweep block, naming "sweep.<key>" and the point.
// `seeds` (the command line's --seeds N) replaces the file's seeds by seed, seed + 1, ..., seed + N - 1.
// `overrides` (--set) apply to every point, as load_scenario applies them; one may not name the sweep
// block or one of its keys (ConfigError naming the option).
Sweep load_sweep(const std::string& path, std::optional<int64_t> seeds = std::nullopt,
                 const std::vector<Override>& overrides = {});

// The scenario trained at `seed` instead of its own: the world (its churn) keeps the scenario's draws,
// and the resolved YAML (so the run's hash) says `seed: <seed>` without the `seeds` key.
Scenario at_seed(const Scenario& scenario, uint64_t seed);

// The scenario file's YAML with each (dotted key, scalar) of `values` put in place and the sweep block
// removed, as text for load_scenario_text. Throws ConfigError naming the key when it names nothing.
std::string apply_sweep_values(const std::string& path, const std::vector<std::pair<std::string, std::string>>& values);

}  // namespace locosim
