// The relay host, site groups and the choice of collective algorithms (`network:`).
#include "config/platform.hpp"

#include <string>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "config/section.hpp"
#include "config/platform_test_util.hpp"
#include <doctest/doctest.h>

using locosim::AllGatherAlgorithm;
using locosim::AllReduceAlgorithm;
using locosim::CollectiveChoice;
using locosim::ConfigError;
using locosim::parse_platform;
using locosim::PlatformSpec;
using locosim::Section;

using namespace platform_test;

TEST_CASE("platform: a relay with its own links, or on a site's LAN") {
  PlatformSpec p = parse(std::string(kAccelerators) + kTwoSites +
                         "wan:\n"
                         "  - {from: eu, to: us, bandwidth: 935 Mbps, latency: 40 ms}\n"
                         "hosts:\n"
                         "  - {name: a, site: eu, accelerator: h100, count: 2}\n"
                         "relay: {uplink: {bandwidth: 10 Gbps, latency: 2 ms}, downlink: {bandwidth: 5 Gbps, latency: 3 ms}}\n");
  REQUIRE(p.relay.has_value());
  CHECK(p.hosts.size() == 2);  // the relay is not a worker
  CHECK(p.relay->name == "relay");
  CHECK(p.relay->site.empty());
  CHECK(p.relay->gpus == 0);
  CHECK(p.relay->speed_flops == 0);
  CHECK(p.relay->uplink.bandwidth_bps == doctest::Approx(10e9));
  CHECK(p.relay->downlink.latency_s == doctest::Approx(3e-3));
  CHECK(p.endpoint_count() == 3);
  CHECK(p.endpoint(1).name == "a-1");
  CHECK(p.endpoint(2).name == "relay");

  PlatformSpec in_site = parse(std::string(kAccelerators) + kTwoSites +
                               "wan:\n"
                               "  - {from: eu, to: us, bandwidth: 935 Mbps, latency: 40 ms}\n"
                               "hosts:\n"
                               "  - {name: a, site: eu, accelerator: h100}\n"
                               "relay: {site: us, name: aggregator}\n");
  REQUIRE(in_site.relay.has_value());
  CHECK(in_site.relay->name == "aggregator");
  CHECK(in_site.relay->site == "us");

  PlatformSpec none = parse(std::string(kAccelerators) + kTwoSites + "hosts:\n  - {name: a, site: eu, accelerator: h100}\n");
  CHECK(!none.relay.has_value());
  CHECK(none.endpoint_count() == 1);
}

TEST_CASE("platform: relay errors name the key and the fix") {
  std::string host = "hosts:\n  - {name: a, site: eu, accelerator: h100}\n";   // lines 8-9
  ConfigError links = parse_error(std::string(kAccelerators) + kTwoSites + host + "relay: {name: r}\n");  // line 10
  CHECK(links.key() == "relay");
  CHECK(links.line() == 10);
  CHECK(contains(links.what(), "relay 'r' has no site and no uplink/downlink"));

  ConfigError both = parse_error(std::string(kAccelerators) + kTwoSites + host +
                                 "relay: {site: eu, uplink: {bandwidth: 1 Gbps, latency: 1 ms}}\n");
  CHECK(both.key() == "relay.uplink");
  CHECK(contains(both.what(), "relay 'relay' is in site 'eu' and uses the site's links"));

  ConfigError clash = parse_error(std::string(kAccelerators) + kTwoSites + host + "relay: {name: a, site: eu}\n");
  CHECK(clash.key() == "relay.name");
  CHECK(contains(clash.what(), "'a' already names a host or a site: give the relay another name"));

  ConfigError typo = parse_error(std::string(kAccelerators) + kTwoSites + host + "relay: {site: eu, gpus: 1}\n");
  CHECK(typo.key() == "relay.gpus");

  // The relay needs a route to every host: a relay with its own links cannot reach site us (no access links).
  ConfigError route = parse_error(std::string(kAccelerators) + kTwoSites +
                                  "hosts:\n  - {name: a, site: us, accelerator: h100}\n"
                                  "relay: {uplink: {bandwidth: 1 Gbps, latency: 1 ms}, downlink: {bandwidth: 1 Gbps, latency: 1 ms}}\n");
  CHECK(route.key() == "sites.us");
  CHECK(contains(route.what(), "no route between site us and the hosts (or relay) that have their own links"));

  // Nor can a relay on site us reach site eu without a wan entry.
  ConfigError site_route = parse_error(std::string(kAccelerators) + kTwoSites + host + "relay: {site: us}\n");
  CHECK(site_route.key() == "sites.us");
  CHECK(contains(site_route.what(), "no route from site eu to site us"));
}

TEST_CASE("platform: site_groups puts each site's hosts together and each siteless host alone") {
  std::string own = "uplink: {bandwidth: 1 Gbps, latency: 1 ms}, downlink: {bandwidth: 1 Gbps, latency: 1 ms}";
  PlatformSpec p = parse(std::string(kAccelerators) +
                         "sites:\n"
                         "  eu: {lan: {bandwidth: 100 Gbps, latency: 5 us}, " + own + "}\n"
                         "  us: {lan: {bandwidth: 100 Gbps, latency: 5 us}, " + own + "}\n"
                         "hosts:\n"
                         "  - {name: x, site: us, accelerator: h100}\n"          // rank 0
                         "  - {name: e, site: eu, accelerator: h100, count: 2}\n" // ranks 1, 2
                         "  - {name: solo, accelerator: h100, count: 2, " + own + "}\n"  // ranks 3, 4
                         "  - {name: y, site: us, accelerator: h100}\n");        // rank 5
  using Groups = std::vector<std::vector<int>>;
  CHECK(locosim::site_groups(p) == Groups{{0, 5}, {1, 2}, {3}, {4}});
}

namespace {

// Reads `network:` from a scenario-like text against platform `p`.
CollectiveChoice network(const std::string& yaml, const PlatformSpec& p) {
  Section top = Section::load_string(yaml, "s.yaml");
  Section n = top.child("network", /*optional=*/true);
  return locosim::parse_network(n, p);
}

ConfigError network_error(const std::string& yaml, const PlatformSpec& p) {
  return error_of([&] { network(yaml, p); });
}

}  // namespace

TEST_CASE("platform: network auto picks hierarchical for shared sites and relay when there is a relay") {
  std::string own = "uplink: {bandwidth: 1 Gbps, latency: 1 ms}, downlink: {bandwidth: 1 Gbps, latency: 1 ms}";
  PlatformSpec flat = parse(std::string(kAccelerators) + "hosts:\n  - {name: a, accelerator: h100, count: 3, " + own + "}\n");
  PlatformSpec one_per_site = parse(std::string(kAccelerators) + kTwoSites +
                                    "wan:\n  - {from: eu, to: us, bandwidth: 1 Gbps, latency: 1 ms}\n"
                                    "hosts:\n  - {name: a, site: eu, accelerator: h100}\n  - {name: b, site: us, accelerator: h100}\n");
  PlatformSpec shared = parse(std::string(kAccelerators) + kTwoSites +
                              "hosts:\n  - {name: a, site: eu, accelerator: h100, count: 2}\n"
                              "relay: {" + own + "}\n");

  CollectiveChoice c = network("seed: 1\n", flat);  // no network block: auto, auto
  CHECK(c.all_reduce == AllReduceAlgorithm::ring);
  CHECK(c.all_gather == AllGatherAlgorithm::mesh);
  c = network("network: {all_reduce: auto}\n", one_per_site);
  CHECK(c.all_reduce == AllReduceAlgorithm::ring);
  c = network("network: {}\n", shared);
  CHECK(c.all_reduce == AllReduceAlgorithm::hierarchical);
  CHECK(c.all_gather == AllGatherAlgorithm::relay);

  // Explicit choices are kept, whatever auto would have picked.
  c = network("network: {all_reduce: relay, all_gather: ring}\n", shared);
  CHECK(c.all_reduce == AllReduceAlgorithm::relay);
  CHECK(c.all_gather == AllGatherAlgorithm::ring);
  c = network("network: {all_reduce: hierarchical, all_gather: mesh}\n", flat);
  CHECK(c.all_reduce == AllReduceAlgorithm::hierarchical);
  CHECK(c.all_gather == AllGatherAlgorithm::mesh);
  CHECK(std::string(locosim::algorithm_name(AllReduceAlgorithm::hierarchical)) == "hierarchical");
  CHECK(std::string(locosim::algorithm_name(AllGatherAlgorithm::relay)) == "relay");
}

TEST_CASE("platform: network relay without a relay host, and unknown names") {
  std::string own = "uplink: {bandwidth: 1 Gbps, latency: 1 ms}, downlink: {bandwidth: 1 Gbps, latency: 1 ms}";
  PlatformSpec flat = parse(std::string(kAccelerators) + "hosts:\n  - {name: a, accelerator: h100, count: 3, " + own + "}\n");
  ConfigError reduce = network_error("seed: 1\nnetwork: {all_reduce: relay}\n", flat);
  CHECK(reduce.key() == "network.all_reduce");
  CHECK(reduce.line() == 2);
  CHECK(contains(reduce.what(), "relay needs a relay host, and platform 'p.yaml' has none: add `relay:"));
  ConfigError gather = network_error("network: {all_gather: relay}\n", flat);
  CHECK(gather.key() == "network.all_gather");
  ConfigError name = network_error("network: {all_gather: butterfly}\n", flat);
  CHECK(name.key() == "network.all_gather");
  ConfigError typo = network_error("network: {allreduce: ring}\n", flat);
  CHECK(typo.key() == "network.allreduce");
}
