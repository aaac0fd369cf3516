// The catalogue of policies: parse a scenario's policy entry, build the policy for one worker.
// Adding a policy: its own file (config + factory), one alternative in PolicyConfig, one branch in
// policies.cpp.
#pragma once
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "algorithms/co2.hpp"
#include "algorithms/ddp.hpp"
#include "algorithms/demo.hpp"
#include "algorithms/diloco.hpp"
#include "algorithms/fedavg.hpp"
#include "algorithms/streaming_diloco.hpp"

namespace locosim {

class Section;

using PolicyConfig = std::variant<DdpConfig, DiLoCoConfig, DemoConfig, StreamingDiLoCoConfig, Co2Config, FedAvgConfig>;

struct PolicySpec {
  std::string name;    // the policy ("diloco")
  std::string label;   // the run's name in tables and folders ("diloco-h50"); defaults to name
  PolicyConfig config;
};

const std::vector<std::string>& policy_names();

// Reads one entry of the scenario's `policies:` list (name, optional label, the policy's keys).
PolicySpec parse_policy(Section& s);

std::unique_ptr<Policy> make_policy(const PolicySpec& spec, PolicyContext ctx);

}  // namespace locosim
