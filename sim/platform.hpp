// Builds the SimGrid platform (star zones of hosts inside a full zone of sites, per-direction links) from a
// PlatformSpec, and sets the network model (ideal: a lone transfer takes bytes/bandwidth + latency; tcp: calibrated).
#pragma once
#include <simgrid/forward.h>

#include <vector>

#include "config/network_model.hpp"
#include "config/platform.hpp"
#include "config/world.hpp"

namespace locosim {

// Sets SimGrid's flow model: ideal, or TCP with its calibrated factors (see platform.cpp for the
// choice and its consequences).
// REQUIRES: called once, after the Engine is created and before build_platform.
void configure_network_model(simgrid::s4u::Engine& engine, const NetworkModelSpec& model = {});

struct BuiltPlatform {
  std::vector<simgrid::s4u::Host*> hosts;  // same order as spec.hosts; owned by the Engine
  simgrid::s4u::Host* relay = nullptr;     // spec.relay's host, if any (not a worker)
};

// Creates zone "world" with one host per spec.hosts entry (speed = speed_flops) and one for the relay,
// every link of platform_links (SHARED: concurrent flows split its bandwidth) and routes such that
// every ordered pair of them goes along route_link_names (both in config/platform.hpp): a star zone
// per site (and one for the endpoints with their own links), so memory and build time grow with K.
// REQUIRES: an Engine exists, configure_network_model was called, spec came from parse_platform
// (so every pair has a route). Call at most once per Engine.
// The world's changes (profiles, churn) are attached to the hosts and links before they are sealed.
BuiltPlatform build_platform(const PlatformSpec& spec, const WorldSpec& world = {});

}  // namespace locosim
