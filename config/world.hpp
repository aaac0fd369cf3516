// The scenario's `world:` section: how the simulated world changes during a run (stragglers, hosts
// that leave and come back, links that slow down or fail), as scripted events, measured traces and
// random churn. Plain data and its parser; the simulator applies it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/platform.hpp"

namespace locosim {

class Section;

enum class WorldResource { host_speed, host_state, link_bandwidth, link_latency, link_state };

// "speed", "state", "bandwidth", "latency", "state": the key that sets it in the scenario.
const char* resource_key(WorldResource what);

// One resource's values over time: at points[i].first seconds the resource takes value points[i].second
// (speed and bandwidth: fraction of nominal, in [0.001, 100]; latency: seconds, 0 or in [1 ns, 1 h];
// state: 1 on, 0 off). Before the first point it is nominal (1, or the link's latency from the platform).
// Times are 0 or in [1 ns, 1e9 s]: no value is subnormal, so each survives SimGrid's profile text.
struct WorldProfile {
  std::string target;           // a worker host's name or a link name (link_names)
  WorldResource what = WorldResource::host_speed;
  std::vector<std::pair<double, double>> points;   // sorted by time, strictly increasing times
  // < 0: not repeating; else the points repeat with this period (SimGrid's periodicity): at
  // k·period_s + points[i].first the resource takes points[i].second, for k = 0, 1, ...
  // Every point's time is then in [0, period_s), and period_s >= 100 ms per point (a bounded event rate).
  double period_s = -1;
  std::string source;           // "file:line" of the YAML entries (and the trace file) that made it, for notes
};

// Random churn of a group of hosts: each alternates online periods ~ Exp(mean mtbf) and away periods ~ Exp(mean mttr).
struct ChurnSpec {
  std::vector<int> hosts;       // worker ranks (indices into platform.hosts), ascending
  double mtbf_s = 0, mttr_s = 0;
  double start_s = 0;           // no failure before this time
  uint64_t seed = 0;            // from the entry's `seed:`, else derived from the scenario seed and the entry index
  std::string source;
};

struct WorldSpec {
  double failure_timeout_s = 10;       // how long survivors take to notice a failed collective (NCCL/Gloo timeout)
  std::vector<WorldProfile> profiles;  // at most one per (target, what): events' groups first, then traces
  std::vector<ChurnSpec> churn;        // no host in two groups, nor with a host state profile
  bool empty() const { return profiles.empty() && churn.empty(); }  // nothing changes
};

// Reads a scenario's `world:` mapping (an absent one, read as an empty section, gives an empty WorldSpec
// with the default failure_timeout). Hosts are platform.hosts' workers; links are link_names(platform).
// Trace files resolve next to the scenario file. Throws ConfigError (file:line, dotted key, constraint)
// for unknown keys, bad values, unreadable or malformed traces, two sources for one (target, what), and
// overlapping events.
WorldSpec parse_world(Section& world, const PlatformSpec& platform, uint64_t scenario_seed);

// The seed of the churn entry at `index` without a `seed:` key: 63 bits of a hash of both, so that
// resolved.yaml can record it as a YAML integer and churn groups draw independent streams.
uint64_t churn_seed(uint64_t scenario_seed, size_t index);

}  // namespace locosim
