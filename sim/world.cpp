// attach_world: WorldProfile → SimGrid profile text; ChurnSpec → a state profile per host whose
// sessions are drawn, as the simulation reaches them, from a generator seeded by (seed, rank).
#include "sim/world.hpp"

#include <simgrid/kernel/ProfileBuilder.hpp>
#include <simgrid/s4u.hpp>

#include <cstdio>
#include <memory>
#include <random>

namespace sg4 = simgrid::s4u;
namespace profile = simgrid::kernel::profile;

namespace locosim {
namespace {

// SimGrid reads a speed profile as a fraction of the host's speed but a bandwidth profile as bytes
// per second: `scale` turns fractions of nominal into those. It parses each number with std::stod, which
// throws on a subnormal: parse_world admits none (fractions >= 0.001 of links of >= 1 kbps; times and
// latencies 0 or >= 1 ns), and fuzz/world_fuzz.cpp checks that every value reads back.
std::string profile_text(const WorldProfile& p, double scale) {
  std::string text;
  char line[64];
  for (const auto& [t, v] : p.points) {
    std::snprintf(line, sizeof line, "%.17g %.17g\n", t, v * scale);
    text += line;
  }
  return text;
}

// Sessions of one host: online ~ Exp(mean mtbf), then away ~ Exp(mean mttr), from start_s on.
// SimGrid asks for more whenever the simulation has used up the values drawn so far, and reads the
// date of each value it is given as the delay since the previous one (the first: since time 0).
class Sessions {
 public:
  Sessions(const ChurnSpec& churn, int rank) : mtbf_s_(churn.mtbf_s), mttr_s_(churn.mttr_s), start_s_(churn.start_s) {
    std::seed_seq seq{static_cast<uint32_t>(churn.seed), static_cast<uint32_t>(churn.seed >> 32),
                      static_cast<uint32_t>(rank)};
    rng_.seed(seq);
  }
  void operator()(std::vector<profile::DatedValue>& values) {
    for (int i = 0; i < 16; ++i) {  // a few sessions at a time
      values.emplace_back(start_s_ + std::exponential_distribution<double>(1 / mtbf_s_)(rng_), 0);
      start_s_ = 0;  // only the first online period starts late
      values.emplace_back(std::exponential_distribution<double>(1 / mttr_s_)(rng_), 1);
    }
  }

 private:
  double mtbf_s_, mttr_s_, start_s_;
  std::mt19937_64 rng_;
};

}  // namespace

void attach_world(const WorldSpec& world, const PlatformSpec& platform) {
  for (size_t i = 0; i < world.profiles.size(); ++i) {
    const WorldProfile& p = world.profiles[i];
    const std::string name = "world-" + std::to_string(i) + "-" + p.target + "-" + resource_key(p.what);
    const double scale = p.what == WorldResource::link_bandwidth ? sg4::Link::by_name(p.target)->get_bandwidth() : 1;
    profile::Profile* pr = profile::ProfileBuilder::from_string(name, profile_text(p, scale), p.period_s);
    switch (p.what) {
      case WorldResource::host_speed: sg4::Host::by_name(p.target)->set_speed_profile(pr); break;
      case WorldResource::host_state: sg4::Host::by_name(p.target)->set_state_profile(pr); break;
      case WorldResource::link_bandwidth: sg4::Link::by_name(p.target)->set_bandwidth_profile(pr); break;
      case WorldResource::link_latency: sg4::Link::by_name(p.target)->set_latency_profile(pr); break;
      case WorldResource::link_state: sg4::Link::by_name(p.target)->set_state_profile(pr); break;
    }
  }
  for (size_t g = 0; g < world.churn.size(); ++g) {
    const ChurnSpec& churn = world.churn[g];
    for (int rank : churn.hosts) {
      const std::string& host = platform.hosts[rank].name;
      auto sessions = std::make_shared<Sessions>(churn, rank);
      sg4::Host::by_name(host)->set_state_profile(profile::ProfileBuilder::from_callback(
          "churn-" + std::to_string(g) + "-" + host,
          [sessions](std::vector<profile::DatedValue>& values) { (*sessions)(values); }, -1));
    }
  }
}

bool world_can_fail(const WorldSpec& world) {
  if (!world.churn.empty()) return true;
  for (const WorldProfile& p : world.profiles) {
    if (p.what == WorldResource::host_state || p.what == WorldResource::link_state) return true;
  }
  return false;
}

}  // namespace locosim
