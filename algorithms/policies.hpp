// The catalogue of policies: parse a scenario's policy entry, build the policy for one worker.
// Adding a policy: its own file (config + factory), one alternative in PolicyConfig, one branch in
// policies.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "algorithms/async_diloco.hpp"
#include "algorithms/co2.hpp"
#include "algorithms/ddp.hpp"
#include "algorithms/demo.hpp"
#include "algorithms/diloco.hpp"
#include "algorithms/fedavg.hpp"
#include "algorithms/streaming_diloco.hpp"

namespace locosim {

class Section;

using PolicyConfig = std::variant<DdpConfig, DiLoCoConfig, DemoConfig, StreamingDiLoCoConfig, Co2Config, FedAvgConfig,
                                  AsyncDiLoCoConfig>;

struct PolicySpec {
  std::string name;    // the policy ("diloco")
  std::string label;   // the run's name in tables and folders ("diloco-h50"); defaults to name
  PolicyConfig config;
  // A point of an entry's `tune:` grid (config/scenario.cpp): the entry's label, and this point's
  // values (key, value as written). Empty for an entry without one.
  std::string tuned_from;
  std::vector<std::pair<std::string, std::string>> tune_values;
};

const std::vector<std::string>& policy_names();

// Reads one entry of the scenario's `policies:` list (name, optional label, the policy's keys).
// The label names a folder: it must be an identifier (see is_identifier in config/section.hpp).
PolicySpec parse_policy(Section& s);

// The policy's key for its synchronization period and its value, in steps (diloco's H: {"inner_steps",
// 500}); std::nullopt for policies that communicate every step (ddp, demo). A period longer than
// train.steps would never synchronize: the scenario checks it (config/scenario.cpp).
std::optional<std::pair<std::string, int64_t>> sync_period(const PolicySpec& spec);

// Whether the policy's numbers (what it trains, in what order) depend on the clock: DiLoCo's timed
// rounds (steps per round from step times) and asynchronous DiLoCo (pushes applied as they arrive).
// The others train the same values on any platform, so a sweep may re-time their runs (sim/run.hpp).
bool reads_clock(const PolicySpec& spec);

std::unique_ptr<Policy> make_policy(const PolicySpec& spec, PolicyContext ctx);

}  // namespace locosim
