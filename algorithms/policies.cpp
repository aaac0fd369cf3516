// The policy catalogue (see policies.hpp).
#include "algorithms/policies.hpp"

#include "config/section.hpp"

namespace locosim {

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = {"ddp", "diloco", "demo", "streaming_diloco", "co2", "fedavg", "async_diloco"};
  return names;
}

PolicySpec parse_policy(Section& s) {
  PolicySpec spec;
  spec.name = s.choice("name", policy_names());
  spec.label = s.identifier("label", spec.name);
  if (spec.name == "ddp") spec.config = DdpConfig::parse(s);
  if (spec.name == "diloco") spec.config = DiLoCoConfig::parse(s);
  if (spec.name == "demo") spec.config = DemoConfig::parse(s);
  if (spec.name == "streaming_diloco") spec.config = StreamingDiLoCoConfig::parse(s);
  if (spec.name == "co2") spec.config = Co2Config::parse(s);
  if (spec.name == "fedavg") spec.config = FedAvgConfig::parse(s);
  if (spec.name == "async_diloco") spec.config = AsyncDiLoCoConfig::parse(s);
  s.finish();
  return spec;
}

std::optional<std::pair<std::string, int64_t>> sync_period(const PolicySpec& spec) {
  if (auto* c = std::get_if<DiLoCoConfig>(&spec.config)) return std::pair{std::string("inner_steps"), c->inner_steps};
  // Every fragment is synced once per H steps; fragment 0 first at step H.
  if (auto* c = std::get_if<StreamingDiLoCoConfig>(&spec.config)) return std::pair{std::string("inner_steps"), c->inner_steps};
  if (auto* c = std::get_if<Co2Config>(&spec.config)) return std::pair{std::string("inner_steps"), c->inner_steps};
  if (auto* c = std::get_if<FedAvgConfig>(&spec.config)) return std::pair{std::string("inner_steps"), c->inner_steps};
  // The fastest worker's steps per push.
  if (auto* c = std::get_if<AsyncDiLoCoConfig>(&spec.config)) return std::pair{std::string("inner_steps"), c->inner_steps};
  return std::nullopt;  // ddp, demo: every step
}

bool reads_clock(const PolicySpec& spec) {
  if (auto* c = std::get_if<DiLoCoConfig>(&spec.config)) return c->round != DiLoCoRound::steps;
  return std::holds_alternative<AsyncDiLoCoConfig>(spec.config);
}

std::unique_ptr<Policy> make_policy(const PolicySpec& spec, PolicyContext ctx) {
  if (auto* c = std::get_if<DdpConfig>(&spec.config)) return make_ddp(*c, std::move(ctx));
  if (auto* c = std::get_if<DemoConfig>(&spec.config)) return make_demo(*c, std::move(ctx));
  if (auto* c = std::get_if<StreamingDiLoCoConfig>(&spec.config)) return make_streaming_diloco(*c, std::move(ctx));
  if (auto* c = std::get_if<Co2Config>(&spec.config)) return make_co2(*c, std::move(ctx));
  if (auto* c = std::get_if<FedAvgConfig>(&spec.config)) return make_fedavg(*c, std::move(ctx));
  if (auto* c = std::get_if<AsyncDiLoCoConfig>(&spec.config)) return make_async_diloco(*c, std::move(ctx));
  return make_diloco(std::get<DiLoCoConfig>(spec.config), std::move(ctx));
}

}  // namespace locosim
