// A scenario's `sweep:` block (schema in config/scenario.cpp): the grid of values it names, expanded
// into one validated Scenario per point. Not here: running them (sim/run.hpp).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "config/scenario.hpp"

namespace locosim {

struct SweepPoint {
  std::string name;                                          // folder: "bandwidth=10Mbps+inner_steps=50"
  std::vector<std::pair<std::string, std::string>> values;   // (sweep key, value as written), in key order
  Scenario scenario;                                         // the scenario with those values in place
};

struct Sweep {
  std::vector<std::string> keys;   // in file order
  std::vector<SweepPoint> points;  // every combination, the first key varying slowest
};

// Reads `path` and expands its sweep; a scenario without one is a single point named "" with no keys.
// Every point is loaded (so validated) here, before anything runs. Throws ConfigError: for the file
// itself as load_scenario does; for a sweep key that names nothing, or a value (or combination) that
// the scenario rejects, at that value's position in the sweep block, naming "sweep.<key>" and the point.
Sweep load_sweep(const std::string& path);

// The scenario file's YAML with each (dotted key, scalar) of `values` put in place and the sweep block
// removed, as text for load_scenario_text. Throws ConfigError naming the key when it names nothing.
std::string apply_sweep_values(const std::string& path, const std::vector<std::pair<std::string, std::string>>& values);

}  // namespace locosim
