// Builds the SimGrid platform (one full zone of hosts, per-direction links and explicit routes) from a
// PlatformSpec, and sets the network model so that a lone transfer takes bytes/bandwidth + latency.
#pragma once
#include <simgrid/forward.h>

#include <cstddef>
#include <string>
#include <vector>

#include "config/platform.hpp"

namespace locosim {

// Sets SimGrid's flow model (see platform.cpp for the choice and its consequences).
// REQUIRES: called once, after the Engine is created and before build_platform.
void configure_network_model(simgrid::s4u::Engine& engine);

struct BuiltPlatform {
  std::vector<simgrid::s4u::Host*> hosts;  // same order as spec.hosts; owned by the Engine
  simgrid::s4u::Host* relay = nullptr;     // spec.relay's host, if any (not a worker)
};

// Creates zone "world" with one host per spec.hosts entry (speed = speed_flops) and one for the relay,
// every link once per direction (SHARED: concurrent flows split its bandwidth) and a route for every
// ordered pair of them.
// REQUIRES: an Engine exists, configure_network_model was called, spec came from parse_platform
// (so every pair has a route). Call at most once per Engine.
BuiltPlatform build_platform(const PlatformSpec& spec);

// The links, in order, that a transfer from spec.endpoint(src) to spec.endpoint(dst) crosses (src != dst;
// index spec.hosts.size() is the relay, whose links follow the same rules as a host's):
//   both outside sites:      [src.up, dst.down]
//   same site s:             [s.lan.src.up, s.lan.dst.down]
//   site s to site t:        [s.lan.src.up, wan.s->t, t.lan.dst.down]  when a wan entry s→t exists
//                            [s.lan.src.up, s.up, t.down, t.lan.dst.down]  otherwise
//   outside to site t:       [src.up, t.down, t.lan.dst.down]   (and site s to outside: [s.lan.src.up, s.up, dst.down])
// Pure: needs no SimGrid, so routes can be tested without an Engine.
std::vector<std::string> route_link_names(const PlatformSpec& spec, size_t src, size_t dst);

}  // namespace locosim
