// Tests of parse_platform: count expansion, units, and the message, line and dotted key of each error.
#include "config/platform.hpp"

#include <set>
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

TEST_CASE("platform: hosts, units and count expansion") {
  PlatformSpec p = parse(std::string(kAccelerators) + kTwoSites +
                         "wan:\n"
                         "  - {from: eu, to: us, bandwidth: 935 Mbps, latency: 40 ms}\n"
                         "hosts:\n"
                         "  - {name: home, accelerator: rtx4090, count: 2,\n"
                         "     uplink: {bandwidth: 20 Mbps, latency: 10 ms}, downlink: {bandwidth: 200 Mbps, latency: 10 ms}}\n"
                         "  - {name: dc, site: eu, accelerator: h100, gpus: 8, count: 3}\n"
                         "  - {name: solo, accelerator: rtx4090, gpus: 2,\n"
                         "     uplink: {bandwidth: 1 Gbps, latency: 0 s}, downlink: {bandwidth: 1 Gbps, latency: 0 s}}\n");
  REQUIRE(p.file == "p.yaml");
  REQUIRE(p.hosts.size() == 6);
  CHECK(p.hosts[0].name == "home-0");
  CHECK(p.hosts[1].name == "home-1");
  CHECK(p.hosts[2].name == "dc-0");
  CHECK(p.hosts[4].name == "dc-2");
  CHECK(p.hosts[5].name == "solo");  // count 1 keeps the name
  CHECK(p.hosts[5].speed_flops == doctest::Approx(2 * 165e12 * 0.35));

  CHECK(p.hosts[0].site.empty());
  CHECK(p.hosts[0].gpus == 1);
  CHECK(p.hosts[0].uplink.bandwidth_bps == doctest::Approx(20e6));
  CHECK(p.hosts[0].uplink.latency_s == doctest::Approx(0.010));
  CHECK(p.hosts[1].downlink.bandwidth_bps == doctest::Approx(200e6));
  CHECK(p.hosts[0].speed_flops == doctest::Approx(165e12 * 0.35));
  CHECK(p.hosts[3].site == "eu");
  CHECK(p.hosts[3].gpus == 8);
  CHECK(p.hosts[3].speed_flops == doctest::Approx(8 * 989e12 * 0.4));

  REQUIRE(p.accelerators.size() == 2);
  REQUIRE(p.accelerator("h100") != nullptr);
  CHECK(p.accelerator("h100")->peak_flops == doctest::Approx(989e12));
  CHECK(p.accelerator("h200") == nullptr);

  REQUIRE(p.sites.size() == 2);
  const auto* eu = p.site("eu");
  REQUIRE(eu != nullptr);
  CHECK(eu->lan.bandwidth_bps == doctest::Approx(100e9));
  CHECK(eu->lan.latency_s == doctest::Approx(5e-6));
  REQUIRE(eu->uplink.has_value());
  CHECK(eu->downlink->bandwidth_bps == doctest::Approx(2e9));
  CHECK(p.site("us")->lan.latency_s == 0);  // a zero latency is allowed
  CHECK(!p.site("us")->uplink.has_value());

  // both_ways (the default) adds the reverse direction with the same link.
  REQUIRE(p.wan.size() == 2);
  CHECK(p.wan[0].from == "eu");
  CHECK(p.wan[0].to == "us");
  CHECK(p.wan[1].from == "us");
  CHECK(p.wan[1].to == "eu");
  CHECK(p.wan[1].link.bandwidth_bps == doctest::Approx(935e6));
  CHECK(p.wan[1].link.latency_s == doctest::Approx(0.040));
}

TEST_CASE("platform: a one-way wan entry and both access links give every pair a route") {
  PlatformSpec p = parse(std::string(kAccelerators) +
                         "sites:\n"
                         "  a: {lan: {bandwidth: 10 Gbps, latency: 1 us}}\n"
                         "  b: {lan: {bandwidth: 10 Gbps, latency: 1 us}}\n"
                         "wan:\n"
                         "  - {from: a, to: b, bandwidth: 1 Gbps, latency: 1 ms, both_ways: false}\n"
                         "  - {from: b, to: a, bandwidth: 2 Gbps, latency: 2 ms, both_ways: false}\n"
                         "hosts:\n"
                         "  - {name: x, site: a, accelerator: h100}\n"
                         "  - {name: y, site: b, accelerator: h100}\n");
  REQUIRE(p.wan.size() == 2);
  CHECK(p.wan[1].link.bandwidth_bps == doctest::Approx(2e9));
}

TEST_CASE("platform: rtt is the round trip, half of it each way, and latency and rtt together are refused") {
  PlatformSpec p = parse(std::string(kAccelerators) + kTwoSites +
                         "wan:\n"
                         "  - {from: eu, to: us, bandwidth: 1 Gbps, rtt: 80 ms}\n"
                         "hosts:\n"
                         "  - {name: home, accelerator: rtx4090,\n"
                         "     uplink: {bandwidth: 20 Mbps, rtt: 30 ms}, downlink: {bandwidth: 200 Mbps, latency: 15 ms}}\n"
                         "  - {name: dc, site: eu, accelerator: h100}\n");
  CHECK(p.wan[0].link.latency_s == doctest::Approx(0.040));
  CHECK(p.wan[1].link.latency_s == doctest::Approx(0.040));  // both ways
  CHECK(p.hosts[0].uplink.latency_s == doctest::Approx(0.015));
  CHECK(p.hosts[0].uplink.latency_s == p.hosts[0].downlink.latency_s);

  ConfigError both = parse_error(std::string(kAccelerators) +
                                 "hosts:\n"
                                 "  - {name: home, accelerator: rtx4090,\n"
                                 "     uplink: {bandwidth: 20 Mbps, latency: 15 ms, rtt: 30 ms}, downlink: {bandwidth: 2 Gbps, latency: 1 ms}}\n");
  CHECK(both.key() == "hosts[0].uplink.rtt");
  CHECK(contains(both.what(), "not both"));
  ConfigError typo = parse_error(std::string(kAccelerators) +
                                 "hosts:\n"
                                 "  - {name: home, accelerator: rtx4090,\n"
                                 "     uplink: {bandwidth: 20 Mbps, latency: 15 ms, rt: 30 ms}, downlink: {bandwidth: 2 Gbps, latency: 1 ms}}\n");
  CHECK(contains(typo.what(), "did you mean 'rtt'?"));
}

TEST_CASE("platform: every shipped platform file parses") {
  const std::vector<std::pair<std::string, size_t>> files = {{"platforms/consumer-mix.yaml", 4},
                                                             {"platforms/opendiloco-3-countries.yaml", 4},
                                                             {"platforms/consumer-32.yaml", 32},
                                                             {"platforms/lan-8.yaml", 8}};
  for (const auto& [file, hosts] : files) {
    CAPTURE(file);
    Section s = Section::load_file(file);
    PlatformSpec p = parse_platform(s);
    CHECK(p.hosts.size() == hosts);
  }
  // consumer-32 has a relay server that is not one of its 32 workers.
  Section consumer = Section::load_file("platforms/consumer-32.yaml");
  PlatformSpec swarm = parse_platform(consumer);
  REQUIRE(swarm.relay.has_value());
  CHECK(swarm.relay->uplink.bandwidth_bps == doctest::Approx(10e9));
  CHECK(swarm.endpoint_count() == 33);
  // OpenDiLoCo's wan matrix: every pair of its 4 sites, both ways, 127-935 Mbit/s.
  Section s = Section::load_file("platforms/opendiloco-3-countries.yaml");
  PlatformSpec p = parse_platform(s);
  CHECK(p.wan.size() == 12);
  for (const auto& w : p.wan) {
    CHECK(w.link.bandwidth_bps >= 127e6);
    CHECK(w.link.bandwidth_bps <= 935e6);
  }
}

TEST_CASE("platform: duplicate host names, also after count expansion") {
  std::string links = "uplink: {bandwidth: 1 Gbps, latency: 1 ms}, downlink: {bandwidth: 1 Gbps, latency: 1 ms}";
  ConfigError e = parse_error(std::string(kAccelerators) +
                              "hosts:\n"
                              "  - {name: a, accelerator: h100, " + links + "}\n"     // line 5
                              "  - {name: a, accelerator: h100, " + links + "}\n");   // line 6
  CHECK(e.key() == "hosts[1].name");
  CHECK(e.line() == 6);
  CHECK(contains(e.what(), "host name 'a' is already used by hosts[0]"));

  ConfigError expanded = parse_error(std::string(kAccelerators) +
                                     "hosts:\n"
                                     "  - {name: a-1, accelerator: h100, " + links + "}\n"
                                     "  - {name: a, count: 2, accelerator: h100, " + links + "}\n");
  CHECK(expanded.key() == "hosts[1].name");
  CHECK(expanded.line() == 6);
  CHECK(contains(expanded.what(), "host name 'a-1' is already used by hosts[0]"));
}

TEST_CASE("platform: count must be at least 1") {
  ConfigError e = parse_error(std::string(kAccelerators) +
                              "hosts:\n"
                              "  - {name: a, accelerator: h100, count: 0,\n"          // line 5
                              "     uplink: {bandwidth: 1 Gbps, latency: 1 ms}, downlink: {bandwidth: 1 Gbps, latency: 1 ms}}\n");
  CHECK(e.key() == "hosts[0].count");
  CHECK(e.line() == 5);
  CHECK(contains(e.what(), "must be >= 1, got 0"));

  // Platforms stop at 100 000 hosts.
  std::string links = "uplink: {bandwidth: 1 Gbps, latency: 1 ms}, downlink: {bandwidth: 1 Gbps, latency: 1 ms}";
  ConfigError many = parse_error(std::string(kAccelerators) +
                                 "hosts:\n"
                                 "  - {name: a, accelerator: h100, count: 99990, " + links + "}\n"
                                 "  - {name: b, accelerator: h100, count: 11, " + links + "}\n");   // line 6
  CHECK(many.key() == "hosts[1].count");
  CHECK(many.line() == 6);
  CHECK(contains(many.what(), "the platform has 100001 hosts, more than 100000"));
}

TEST_CASE("platform: a host in a site may not have its own uplink") {
  ConfigError e = parse_error(std::string(kAccelerators) + kTwoSites +
                              "hosts:\n"                                                // line 8
                              "  - {name: a, site: eu, accelerator: h100,\n"            // line 9
                              "     uplink: {bandwidth: 1 Gbps, latency: 1 ms}}\n");   // line 10
  CHECK(e.key() == "hosts[0].uplink");
  CHECK(e.line() == 10);
  CHECK(contains(e.what(), "host 'a' is in site 'eu' and uses the site's links: remove uplink here, or remove site"));
}

TEST_CASE("platform: a host without a site needs an uplink and a downlink") {
  ConfigError e = parse_error(std::string(kAccelerators) +
                              "hosts:\n"
                              "  - {name: a, accelerator: h100}\n");                    // line 5
  CHECK(e.key() == "hosts[0]");
  CHECK(e.line() == 5);
  CHECK(contains(e.what(), "host 'a' has no site and no uplink/downlink"));

  ConfigError half = parse_error(std::string(kAccelerators) +
                                 "hosts:\n"
                                 "  - {name: a, accelerator: h100, uplink: {bandwidth: 1 Gbps, latency: 1 ms}}\n");
  CHECK(half.key() == "hosts[0].downlink");
  CHECK(half.line() == 5);
  CHECK(contains(half.what(), "is required"));
}

TEST_CASE("platform: a host in an undefined site") {
  ConfigError e = parse_error(std::string(kAccelerators) + kTwoSites +
                              "hosts:\n"
                              "  - {name: a, site: asia, accelerator: h100}\n");       // line 9
  CHECK(e.key() == "hosts[0].site");
  CHECK(e.line() == 9);
  CHECK(contains(e.what(), "site 'asia' is not in sites (known: eu, us)"));
}

TEST_CASE("platform: a wan entry naming an undefined site, or the same site twice") {
  ConfigError e = parse_error(std::string(kAccelerators) + kTwoSites +
                              "wan:\n"                                                  // line 8
                              "  - {from: eu, to: asia, bandwidth: 1 Gbps, latency: 1 ms}\n"
                              "hosts:\n"
                              "  - {name: a, site: eu, accelerator: h100}\n");
  CHECK(e.key() == "wan[0].to");
  CHECK(e.line() == 9);
  CHECK(contains(e.what(), "site 'asia' is not in sites (known: eu, us)"));

  ConfigError same = parse_error(std::string(kAccelerators) + kTwoSites +
                                 "wan:\n"
                                 "  - {from: eu, to: eu, bandwidth: 1 Gbps, latency: 1 ms}\n"
                                 "hosts:\n"
                                 "  - {name: a, site: eu, accelerator: h100}\n");
  CHECK(same.key() == "wan[0].to");
  CHECK(contains(same.what(), "joins two different sites"));
}

TEST_CASE("platform: a wan path given twice") {
  ConfigError e = parse_error(std::string(kAccelerators) + kTwoSites +
                              "wan:\n"
                              "  - {from: eu, to: us, bandwidth: 1 Gbps, latency: 1 ms}\n"
                              "  - {from: us, to: eu, bandwidth: 1 Gbps, latency: 1 ms}\n"   // line 10
                              "hosts:\n"
                              "  - {name: a, site: eu, accelerator: h100}\n");
  CHECK(e.key() == "wan[1].to");
  CHECK(e.line() == 10);
  CHECK(contains(e.what(), "the path from us to eu is already given by wan[0]"));
}

TEST_CASE("platform: two sites with neither a wan entry nor both access links") {
  ConfigError e = parse_error(std::string(kAccelerators) + kTwoSites +
                              "hosts:\n"
                              "  - {name: a, site: eu, accelerator: h100}\n"
                              "  - {name: b, site: us, accelerator: h100}\n");
  CHECK(e.key() == "sites.us");  // the site that lacks access links
  CHECK(e.line() == 7);
  CHECK(contains(e.what(),
                 "no route from site eu to site us: give both sites an uplink and downlink, or a wan entry"));

  // A one-way wan entry leaves the reverse direction without a route.
  ConfigError one_way = parse_error(std::string(kAccelerators) + kTwoSites +
                                    "wan:\n"
                                    "  - {from: eu, to: us, bandwidth: 1 Gbps, latency: 1 ms, both_ways: false}\n"
                                    "hosts:\n"
                                    "  - {name: a, site: eu, accelerator: h100}\n"
                                    "  - {name: b, site: us, accelerator: h100}\n");
  CHECK(contains(one_way.what(), "no route from site us to site eu"));
}

TEST_CASE("platform: a site without access links cannot reach hosts outside sites") {
  ConfigError e = parse_error(std::string(kAccelerators) + kTwoSites +
                              "hosts:\n"
                              "  - {name: a, site: us, accelerator: h100}\n"
                              "  - {name: b, accelerator: h100, uplink: {bandwidth: 1 Gbps, latency: 1 ms},\n"
                              "     downlink: {bandwidth: 1 Gbps, latency: 1 ms}}\n");
  CHECK(e.key() == "sites.us");
  CHECK(e.line() == 7);
  CHECK(contains(e.what(), "give site us an uplink and downlink"));
}

TEST_CASE("platform: a site with an uplink but no downlink") {
  ConfigError e = parse_error(std::string(kAccelerators) +
                              "sites:\n"
                              "  eu: {lan: {bandwidth: 1 Gbps, latency: 1 us}, uplink: {bandwidth: 1 Gbps, latency: 1 ms}}\n"
                              "hosts:\n"
                              "  - {name: a, site: eu, accelerator: h100}\n");
  CHECK(e.key() == "sites.eu.downlink");
  CHECK(e.line() == 5);
  CHECK(contains(e.what(), "site 'eu' has an uplink but no downlink"));
}

TEST_CASE("platform: units, names and unknown keys") {
  std::string down = "downlink: {bandwidth: 1 Gbps, latency: 1 ms}";
  ConfigError unit = parse_error(std::string(kAccelerators) +
                                 "hosts:\n"
                                 "  - {name: a, accelerator: h100, uplink: {bandwidth: 1 GB, latency: 1 ms}, " +
                                 down + "}\n");
  CHECK(unit.key() == "hosts[0].uplink.bandwidth");
  CHECK(unit.line() == 5);
  CHECK(contains(unit.what(), "got unit 'GB'"));

  ConfigError negative = parse_error(std::string(kAccelerators) +
                                     "hosts:\n"
                                     "  - {name: a, accelerator: h100, uplink: {bandwidth: 1 Gbps, latency: -1 ms}, " +
                                     down + "}\n");
  CHECK(negative.key() == "hosts[0].uplink.latency");
  CHECK(contains(negative.what(), "must be in [0, 3600]"));

  ConfigError typo = parse_error(std::string(kAccelerators) +
                                 "hosts:\n"
                                 "  - {name: a, accelerator: h100, gpu: 2, uplink: {bandwidth: 1 Gbps, latency: 1 ms}, " +
                                 down + "}\n");
  CHECK(typo.key() == "hosts[0].gpu");
  CHECK(contains(typo.what(), "did you mean 'gpus'?"));

  ConfigError top = parse_error(std::string(kAccelerators) + "host: []\n");
  CHECK(top.key() == "hosts");
  CHECK(contains(top.what(), "is required"));

  ConfigError dotted = parse_error(std::string(kAccelerators) +
                                   "hosts:\n"
                                   "  - {name: a.b, accelerator: h100, uplink: {bandwidth: 1 Gbps, latency: 1 ms}, " +
                                   down + "}\n");
  CHECK(dotted.key() == "hosts[0].name");
  CHECK(contains(dotted.what(), "use only letters, digits"));

  ConfigError clash = parse_error(std::string(kAccelerators) + kTwoSites +
                                  "wan:\n"
                                  "  - {from: eu, to: us, bandwidth: 1 Gbps, latency: 1 ms}\n"
                                  "hosts:\n"
                                  "  - {name: eu, site: eu, accelerator: h100}\n");
  CHECK(clash.key() == "hosts[0].name");
  CHECK(contains(clash.what(), "'eu' names both a site and a host"));

  ConfigError efficiency = parse_error(
      "accelerators:\n"
      "  h100: {peak: 989 TFLOPS, efficiency: 1.5}\n"
      "hosts:\n"
      "  - {name: a, accelerator: h100, uplink: {bandwidth: 1 Gbps, latency: 1 ms}, " + down + "}\n");
  CHECK(efficiency.key() == "accelerators.h100.efficiency");
  CHECK(efficiency.line() == 2);
}

TEST_CASE("platform: every number is bounded: bandwidth, latency, peak and efficiency") {
  const std::string down = "downlink: {bandwidth: 1 Gbps, latency: 1 ms}";
  auto host_with = [&](const std::string& uplink) {
    return std::string(kAccelerators) + "hosts:\n  - {name: a, accelerator: h100, uplink: " + uplink + ", " + down + "}\n";
  };
  struct Case {
    std::string yaml, key, message;
  };
  const std::vector<Case> cases = {
      {host_with("{bandwidth: 1e400 Mbps, latency: 1 ms}"), "hosts[0].uplink.bandwidth", "which is out of range"},
      {host_with("{bandwidth: 100 bps, latency: 1 ms}"), "hosts[0].uplink.bandwidth", "must be in [1000, 1e+16]"},
      {host_with("{bandwidth: 1e5 Tbps, latency: 1 ms}"), "hosts[0].uplink.bandwidth", "must be in [1000, 1e+16]"},
      {host_with("{bandwidth: 1 Gbps, latency: 1e308 s}"), "hosts[0].uplink.latency", "must be in [0, 3600]"},
      {host_with("{bandwidth: 1 Gbps, latency: 2 h}"), "hosts[0].uplink.latency", "must be in [0, 3600]"},
      {"accelerators:\n  slow: {peak: 1e-10 FLOPS, efficiency: 0.5}\nhosts:\n  - {name: a, accelerator: slow, uplink: "
       "{bandwidth: 1 Gbps, latency: 1 ms}, " + down + "}\n",
       "accelerators.slow.peak", "must be in [1000000000, 1e+19]"},
      {"accelerators:\n  fast: {peak: 1e30 FLOPS, efficiency: 0.5}\nhosts:\n  - {name: a, accelerator: fast, uplink: "
       "{bandwidth: 1 Gbps, latency: 1 ms}, " + down + "}\n",
       "accelerators.fast.peak", "must be in [1000000000, 1e+19]"},
      {"accelerators:\n  gpu: {peak: 1 TFLOPS, efficiency: 1e-300}\nhosts:\n  - {name: a, accelerator: gpu, uplink: "
       "{bandwidth: 1 Gbps, latency: 1 ms}, " + down + "}\n",
       "accelerators.gpu.efficiency", "must be in [0.001, 1]"},
      {std::string(kAccelerators) + kTwoSites + "wan:\n  - {from: eu, to: us, bandwidth: 1 Gbps, latency: 1e308 s}\n" +
           "hosts:\n  - {name: a, site: eu, accelerator: h100}\n",
       "wan[0].latency", "must be in [0, 3600]"},
      {std::string(kAccelerators) + "hosts:\n  - {name: a, accelerator: h100, gpus: 2000000, uplink: "
       "{bandwidth: 1 Gbps, latency: 1 ms}, " + down + "}\n",
       "hosts[0].gpus", "must be in [1, 1000000]"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    ConfigError e = parse_error(c.yaml);
    CHECK(e.key() == c.key);
    CHECK(e.line() >= 1);
    CHECK(contains(e.what(), c.message));
  }
}
