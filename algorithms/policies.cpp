// Building a scenario's policy for one worker: the factories of policy_list.hpp, in registry order.
#include "algorithms/policies.hpp"

#include <any>
#include <functional>

#include "algorithms/policy.hpp"
#include "algorithms/policy_list.hpp"

namespace locosim {
namespace {

using Factory = std::function<std::unique_ptr<Policy>(const std::any&, PolicyContext)>;

template <class Config>
Factory erase_factory(std::unique_ptr<Policy> (*make)(const Config&, PolicyContext)) {
  return [make](const std::any& c, PolicyContext ctx) { return make(std::any_cast<const Config&>(c), std::move(ctx)); };
}

}  // namespace

std::unique_ptr<Policy> make_policy(const PolicySpec& spec, PolicyContext ctx) {
#define LOCOSIM_FACTORY(name) erase_factory(make_##name),
  static const std::vector<Factory> factories = {LOCOSIM_POLICIES(LOCOSIM_FACTORY)};
#undef LOCOSIM_FACTORY
  // The factories are in the registry's order: the entry's place is the factory's.
  const size_t index = static_cast<size_t>(&spec.entry() - policy_registry().data());
  return factories[index](spec.config, std::move(ctx));
}

}  // namespace locosim
