// The policy catalogue (see policies.hpp).
#include "algorithms/policies.hpp"

#include "config/section.hpp"

namespace locosim {

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = {"ddp", "diloco", "demo"};
  return names;
}

PolicySpec parse_policy(Section& s) {
  PolicySpec spec;
  spec.name = s.choice("name", policy_names());
  spec.label = s.text("label", spec.name);
  if (spec.name == "ddp") spec.config = DdpConfig::parse(s);
  if (spec.name == "diloco") spec.config = DiLoCoConfig::parse(s);
  if (spec.name == "demo") spec.config = DemoConfig::parse(s);
  s.finish();
  return spec;
}

std::unique_ptr<Policy> make_policy(const PolicySpec& spec, PolicyContext ctx) {
  if (auto* c = std::get_if<DdpConfig>(&spec.config)) return make_ddp(*c, std::move(ctx));
  if (auto* c = std::get_if<DemoConfig>(&spec.config)) return make_demo(*c, std::move(ctx));
  return make_diloco(std::get<DiLoCoConfig>(spec.config), std::move(ctx));
}

}  // namespace locosim
