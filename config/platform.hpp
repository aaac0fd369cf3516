// The platform a scenario runs on: accelerator types, hosts, sites and wide-area links, as read from
// platforms/*.yaml. Plain data; sim/platform.hpp turns it into a SimGrid netzone.
#pragma once
#include <optional>
#include <string>
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

// One worker machine (after `count:` expansion: "home" with count 2 is "home-0", "home-1").
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
  std::vector<HostSpec> hosts;

  const SiteSpec* site(const std::string& name) const;
  const AcceleratorSpec* accelerator(const std::string& name) const;
};

// Reads a platform mapping (a whole platform file, or a scenario's inline `platform:`).
// Throws ConfigError for unknown keys, bad units, undefined accelerators or sites, duplicate
// names, and platforms where some pair of hosts has no route.
PlatformSpec parse_platform(Section& section);

}  // namespace locosim
