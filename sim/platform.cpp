// Turns a PlatformSpec into SimGrid hosts, links and routes, and picks the network model.
// Not here: parsing (config/platform.cpp) and who talks to whom (the collectives).
#include "sim/platform.hpp"

#include "sim/world.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <xbt/log.h>

#include <cstddef>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace sg4 = simgrid::s4u;

namespace locosim {

namespace {
// SimGrid's configuration takes numbers as text: enough digits that the value is the one given.
std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}
}  // namespace

// Network model. We want a lone transfer of S bytes to take exactly S/bandwidth + latency (the sum of
// the route's link latencies, over its slowest link), in both directions of an asymmetric link, so that
// a user can check any simulated time by hand. SimGrid's default LV08 model does not: it multiplies
// latency by 13.01 and bandwidth by 0.97 (a fit of TCP slow start), caps a flow at TCP-gamma/(2·latency)
// (a TCP window over long-latency WAN paths) and, with cross-traffic, charges every flow 5% of its
// rate on the reverse path (TCP acks). Measured on this builder's platform, 10 MB from and to a host
// with 10 Mbps up / 100 Mbps down and 10 ms each way: LV08 takes 8.38 s / 0.95 s, CM02 as set here
// 8.01 s / 0.81 s (sim/platform_test.cpp checks the latter).
//
// CM02 without factors, window cap or cross-traffic gives the plain flow model: concurrent flows share
// each link's bandwidth by max-min fairness (the bottleneck link is split between its flows, and a flow
// limited elsewhere leaves its unused share to the others); there is no TCP slow start, so small
// messages are modeled optimistically. CM02 weights a flow's share by its route latency (penalty =
// latency, like TCP's RTT unfairness): flows with equal route latency get equal shares, a flow whose
// route has twice the latency gets half the share of the other at a shared bottleneck.
// Pitfall: a route whose latencies add up to 0 is weighted as if its latency were 1 s (SimGrid gives
// a latency-free flow the weight 1), so it nearly starves next to flows with a latency. Give links a
// small latency (a LAN's 5 us) rather than 0 when flows with and without latency share a link.
//
// The tcp model (network: {model: tcp}) is the same CM02 flow model with TCP's costs turned on, at
// values measured by scripts/calibrate.py rather than LV08's defaults (fitted on other networks):
// every flow gets bandwidth_factor of its share (TCP/IP and Ethernet headers: 1448 B of payload per
// 1514 B frame), loads its reverse route with 5% of its rate (acknowledgements: on a 20 Mbps uplink
// next to a 100 Mbps download that is a quarter of the uplink) and, with window W, moves at most
// W / (2 · route latency) (one window per round trip on long paths). docs/validation.md has the
// measurements and the prediction errors of both models.
//
// network/optim:Full, not SimGrid's default Lazy: with CM02, Lazy's selective update gets rates wrong
// when one host sends at once to several hosts behind slower downlinks. Measured (SimGrid 3.32): a
// 10 Gbps server sending 1 MB to each of 4 hosts with 100 Mbps downlinks (1 ms + 10 ms) ends one flow
// at 0.091 s, as it should, and the other three at 0.013 s, at 3.3 Gbps each, through 100 Mbps links.
// Full re-solves the whole sharing problem at every event: slower with thousands of flows, but right
// (sim/platform_test.cpp pins this case).
void configure_network_model(sg4::Engine& engine, const NetworkModelSpec& model) {
  // set_config logs "Configuration change: ..." at INFO for each change; the user need not see them.
  xbt_log_control_set("xbt_cfg.thres:warning");
  const bool tcp = model.kind == NetworkModelKind::tcp;
  engine.set_config("network/model:CM02");
  engine.set_config("network/optim:Full");
  engine.set_config("network/latency-factor:" + number_text(tcp ? model.tcp.latency_factor : 1.0));
  engine.set_config("network/bandwidth-factor:" + number_text(tcp ? model.tcp.bandwidth_factor : 1.0));
  engine.set_config("network/TCP-gamma:" + number_text(tcp ? model.tcp.window_bytes : 0.0));
  engine.set_config(std::string("network/crosstraffic:") + (tcp && model.tcp.crosstraffic ? "1" : "0"));
}

// Every route is the source's own uplink (a home's, or its LAN port's), what lies between their
// islands (a site's uplink and the other's downlink, or a WAN link; nothing between two hosts with
// their own links) and the destination's own downlink (route_link_names). So the platform is one
// SimGrid star zone per island, holding each endpoint's up and down link (O(K) routes, not K·(K−1)),
// inside a full zone "world" that holds the routes between islands (sites², a handful). An island is
// a site, or the endpoints with their own links. SimGrid resolves a route between islands through
// their gateways: up(A), the routes between the islands, down(B), the same links as route_link_names.
BuiltPlatform build_platform(const PlatformSpec& spec, const WorldSpec& world) {
  sg4::NetZone* top = sg4::create_full_zone("world");

  struct Island {
    sg4::NetZone* zone = nullptr;
    simgrid::kernel::routing::NetPoint* gateway = nullptr;
    size_t first = 0;  // an endpoint in it: the routes between islands are those of their first endpoints
  };
  std::map<std::string, Island> islands;  // by site; "" for the endpoints with their own links
  auto island_of = [&](const std::string& site, size_t endpoint) -> Island& {
    auto [it, fresh] = islands.try_emplace(site);
    if (fresh) {
      const std::string name = site.empty() ? "own-links" : "site-" + site;
      it->second.zone = sg4::create_star_zone(name)->set_parent(top);
      it->second.gateway = it->second.zone->create_router(name + "-gateway");
      it->second.first = endpoint;
    }
    return it->second;
  };

  BuiltPlatform built;
  std::vector<sg4::Host*> endpoints;  // hosts, then the relay
  for (size_t i = 0; i < spec.endpoint_count(); ++i) {
    const HostSpec& h = spec.endpoint(i);
    // The relay computes nothing (its reductions are not charged): it gets a nominal speed.
    endpoints.push_back(island_of(h.site, i).zone->create_host(h.name, i < spec.hosts.size() ? h.speed_flops : 1.0));
  }
  built.hosts.assign(endpoints.begin(), endpoints.begin() + static_cast<std::ptrdiff_t>(spec.hosts.size()));
  if (spec.relay) built.relay = endpoints.back();

  std::map<std::string, const sg4::Link*> links;
  for (const auto& [name, l] : platform_links(spec)) {
    sg4::Link* link = top->create_link(name, l.bandwidth_bps / 8.0);  // SimGrid counts bytes per second
    link->set_latency(l.latency_s);
    link->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
    links.emplace(name, link);
  }
  auto route_of = [&](const std::vector<std::string>& names, size_t from, size_t to) {
    std::vector<sg4::LinkInRoute> route;
    for (size_t k = from; k < to; ++k) {
      auto it = links.find(names[k]);
      // parse_platform rejects platforms with a missing route; reaching this is a bug here.
      if (it == links.end()) {
        throw std::logic_error("build_platform: a route needs link '" + names[k] + "', which the platform does not define");
      }
      route.emplace_back(it->second);
    }
    return route;
  };
  // Profiles must be attached before a resource is sealed.
  attach_world(world, spec);
  for (sg4::Host* host : endpoints) host->seal();
  for (const auto& [name, link] : links) sg4::Link::by_name(name)->seal();

  // Within an island: each endpoint's own links, as the first and last hop of its routes.
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const std::vector<std::string> up = {own_link(spec, i, "up")}, down = {own_link(spec, i, "down")};
    sg4::NetZone* zone = islands.at(spec.endpoint(i).site).zone;
    zone->add_route(endpoints[i]->get_netpoint(), nullptr, nullptr, nullptr, route_of(up, 0, 1), false);
    zone->add_route(nullptr, endpoints[i]->get_netpoint(), nullptr, nullptr, route_of(down, 0, 1), false);
  }
  for (auto& [site, island] : islands) {  // the gateway adds no link of its own
    island.zone->add_route(island.gateway, nullptr, nullptr, nullptr, {}, false);
    island.zone->add_route(nullptr, island.gateway, nullptr, nullptr, {}, false);
    island.zone->seal();
  }
  // Between islands: the middle of the route between their first endpoints.
  for (const auto& [site_a, a] : islands) {
    for (const auto& [site_b, b] : islands) {
      if (site_a == site_b) continue;
      const std::vector<std::string> names = route_link_names(spec, a.first, b.first);
      top->add_route(a.zone->get_netpoint(), b.zone->get_netpoint(), a.gateway, b.gateway,
                     route_of(names, 1, names.size() - 1), false);
    }
  }
  top->seal();
  return built;
}

}  // namespace locosim
