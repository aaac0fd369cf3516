// A scenario's policy entry through the registry (see policies.hpp).
#include "algorithms/policies.hpp"

#include <stdexcept>

#include "config/section.hpp"

namespace locosim {

const PolicyEntry& PolicySpec::entry() const {
  const PolicyEntry* e = find_policy(name);
  if (!e) throw std::logic_error("policy '" + name + "' is not registered");
  return *e;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PolicyEntry& e : policy_registry()) out.push_back(e.name);
    return out;
  }();
  return names;
}

PolicySpec parse_policy(Section& s) {
  PolicySpec spec;
  spec.name = s.choice("name", policy_names());
  spec.label = s.identifier("label", spec.name);
  spec.config = spec.entry().parse(s);
  s.finish();
  return spec;
}

std::optional<std::pair<std::string, int64_t>> sync_period(const PolicySpec& spec) {
  const std::optional<SyncPeriod> period = spec.entry().sync_period(spec.config);
  if (!period) return std::nullopt;
  return std::pair{period->key, period->steps};
}

bool reads_clock(const PolicySpec& spec) { return spec.entry().reads_clock(spec.config); }

std::unique_ptr<Policy> make_policy(const PolicySpec& spec, PolicyContext ctx) {
  return spec.entry().make(spec.config, std::move(ctx));
}

}  // namespace locosim
