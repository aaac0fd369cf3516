// The platform a scenario runs on: accelerator types, hosts, sites and wide-area links, as read from
// platforms/*.yaml. Plain data; sim/platform.hpp turns it into a SimGrid netzone.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace locosim {

class Section;

struct AcceleratorSpec {
  std::string name;
  double peak_flops = 0;   // dense bf16/fp16 peak of one device, FLOP/s
  double efficiency = 0;   // fraction of peak a training step reaches (MFU), in (0, 1]
};

// One direction of a link: a transfer of S bytes alone on it takes S·8/bandwidth_bps + latency_s.
struct LinkSpec {
  double bandwidth_bps = 0;
  double latency_s = 0;
};

// An island of hosts on a fast LAN that share one WAN access link (uplink and downlink).
struct SiteSpec {
  std::string name;
  LinkSpec lan;                       // per host, each direction
  std::optional<LinkSpec> uplink;     // the site's shared access link to the internet
  std::optional<LinkSpec> downlink;
};

// A measured site-to-site path (iperf matrices between regions); replaces the access links.
struct WanSpec {
  std::string from;
  std::string to;
  LinkSpec link;
};

// One worker machine (after `count:` expansion: "home" with count 2 is "home-0", "home-1"), or the
// relay (an aggregation server that is not a worker: accelerator "", gpus 0, speed_flops 0).
struct HostSpec {
  std::string name;
  std::string accelerator;
  int gpus = 1;
  std::string site;                   // "" when the host has its own access links
  LinkSpec uplink;                    // host's own access link (hosts outside a site)
  LinkSpec downlink;
  double speed_flops = 0;             // gpus × peak × efficiency
};

struct PlatformSpec {
  std::string file;
  std::vector<AcceleratorSpec> accelerators;
  std::vector<SiteSpec> sites;
  std::vector<WanSpec> wan;
  std::vector<HostSpec> hosts;         // the workers, by rank
  std::optional<HostSpec> relay;       // optional aggregation server (relayed collectives); never a worker

  const SiteSpec* site(const std::string& name) const;
  const AcceleratorSpec* accelerator(const std::string& name) const;
  // Route endpoints: hosts[i] for i < hosts.size(), then the relay (index hosts.size()) if there is one.
  size_t endpoint_count() const { return hosts.size() + (relay ? 1 : 0); }
  const HostSpec& endpoint(size_t i) const { return i < hosts.size() ? hosts[i] : relay.value(); }
};

// Every link sim/platform.hpp's build_platform creates, once each, with its bandwidth and latency, in this
// order: per endpoint (workers by rank, then the relay) its uplink and downlink ("home-0.up", "home-0.down",
// or "eu.lan.dc-0.up", "eu.lan.dc-0.down" for a machine in site eu), then per site with access links
// "eu.up", "eu.down", then per wan path "wan.eu->us". Pure, like route_link_names.
std::vector<std::pair<std::string, LinkSpec>> platform_links(const PlatformSpec& spec);
// The names of platform_links, in the same order (what a scenario's world section may name).
std::vector<std::string> link_names(const PlatformSpec& spec);

// The links, in order, that a transfer from spec.endpoint(src) to spec.endpoint(dst) crosses (src != dst;
// index spec.hosts.size() is the relay, whose links follow the same rules as a host's):
//   both outside sites:      [src.up, dst.down]
//   same site s:             [s.lan.src.up, s.lan.dst.down]
//   site s to site t:        [s.lan.src.up, wan.s->t, t.lan.dst.down]  when a wan entry s→t exists
//                            [s.lan.src.up, s.up, t.down, t.lan.dst.down]  otherwise
//   outside to site t:       [src.up, t.down, t.lan.dst.down]   (and site s to outside: [s.lan.src.up, s.up, dst.down])
// Pure: needs no SimGrid, so routes can be tested without an Engine.
std::vector<std::string> route_link_names(const PlatformSpec& spec, size_t src, size_t dst);
// An endpoint's own link, the first hop ("up") or last hop ("down") of every route from or to it:
// "home-0.up", or "eu.lan.dc-0.up" in site eu. What lies between is decided by the two ends' sites.
std::string own_link(const PlatformSpec& spec, size_t endpoint, const char* direction);

// Worker ranks grouped by site, in rank order, groups ordered by their first rank (the site's leader
// in a hierarchical all-reduce). A host outside any site is a group of its own.
std::vector<std::vector<int>> site_groups(const PlatformSpec& spec);

// How collectives travel (scenario key `network:`); sim/collectives.hpp has each algorithm and its time.
// The choice changes only time and bytes, never the numbers (every transport averages in rank order).
enum class AllReduceAlgorithm { ring, relay, hierarchical };
enum class AllGatherAlgorithm { mesh, ring, relay };
struct CollectiveChoice {
  AllReduceAlgorithm all_reduce = AllReduceAlgorithm::ring;
  AllGatherAlgorithm all_gather = AllGatherAlgorithm::mesh;
  // flows: aggregated: the rings, the mesh and the relay all-gather as O(K) flows per collective
  // (sim/collectives.hpp), for thousands of workers; exact (the default): message by message.
  bool aggregated = false;
};
const char* algorithm_name(AllReduceAlgorithm a);
const char* algorithm_name(AllGatherAlgorithm a);

// Reads `network: {all_reduce: auto|ring|relay|hierarchical, all_gather: auto|mesh|ring|relay,
// flows: exact|aggregated}`.
// auto (the default) suits the platform: all_reduce is hierarchical when some site holds more than one
// worker host, else ring; all_gather is relay when the platform has a relay, else mesh.
// Throws ConfigError for `relay` on a platform without a relay host.
CollectiveChoice parse_network(Section& network, const PlatformSpec& platform);

// Reads a platform mapping (a whole platform file, or a scenario's inline `platform:`).
// Throws ConfigError for unknown keys, bad units, undefined accelerators or sites, duplicate
// names, and platforms where some pair of hosts (the relay included) has no route.
PlatformSpec parse_platform(Section& section);

}  // namespace locosim
