// Tests of parse_platform: count expansion, units, and the message, line and dotted key of each error.
#include "config/platform.hpp"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/accelerator_catalog.hpp"
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

TEST_CASE("platform: unknown accelerator names the known ones and the catalogue's") {
  ConfigError e = parse_error(std::string(kAccelerators) +
                              "hosts:\n"                                                 // line 4
                              "  - {name: a, accelerator: h2000, uplink: {bandwidth: 1 Gbps, latency: 1 ms},\n"
                              "     downlink: {bandwidth: 1 Gbps, latency: 1 ms}}\n");
  CHECK(e.key() == "hosts[0].accelerator");
  CHECK(e.line() == 5);
  CHECK(contains(e.what(), "accelerator 'h2000' is not in accelerators (known: h100, rtx4090) nor in the catalogue "
                           "(a100, b200, h100, h100-pcie, h200, l40s, mi250x, mi300x, rtx3090, rtx4090, rtx5090; "
                           "`locosim accelerators` lists them); did you mean 'h200'?"));

  // Without an accelerators map only the catalogue is known; a name near none gets no hint.
  ConfigError bare = parse_error("hosts:\n"
                                 "  - {name: a, accelerator: tpu-v5, uplink: {bandwidth: 1 Gbps, latency: 1 ms},\n"
                                 "     downlink: {bandwidth: 1 Gbps, latency: 1 ms}}\n");
  CHECK(bare.key() == "hosts[0].accelerator");
  CHECK(bare.line() == 2);
  CHECK(contains(bare.what(), "is not in accelerators (known: none defined) nor in the catalogue (a100,"));
  CHECK(!contains(bare.what(), "did you mean"));

  // A near miss of the file's own name is suggested before a catalogue one.
  ConfigError own = parse_error("accelerators:\n  myh100: {peak: 900 TFLOPS, efficiency: 0.4}\n"
                                "hosts:\n"
                                "  - {name: a, accelerator: myh10, uplink: {bandwidth: 1 Gbps, latency: 1 ms},\n"
                                "     downlink: {bandwidth: 1 Gbps, latency: 1 ms}}\n");
  CHECK(contains(own.what(), "did you mean 'myh100'?"));
}

TEST_CASE("platform: a host names a catalogue accelerator, and resolved.yaml shows its peak and efficiency") {
  const std::string links = "uplink: {bandwidth: 1 Gbps, latency: 1 ms}, downlink: {bandwidth: 1 Gbps, latency: 1 ms}";
  const std::string yaml = "accelerators:\n"
                           "  rtx4090: {peak: 165 TFLOPS, efficiency: 0.35}\n"   // the file's own rtx4090 wins
                           "hosts:\n"
                           "  - {name: dc, accelerator: h100, gpus: 8, " + links + "}\n"
                           "  - {name: home, accelerator: rtx4090, " + links + "}\n"
                           "  - {name: lab, accelerator: l40s, count: 2, " + links + "}\n";
  Section s = Section::load_string(yaml, "p.yaml");
  PlatformSpec p = parse_platform(s);
  REQUIRE(p.hosts.size() == 4);
  CHECK(p.hosts[0].speed_flops == doctest::Approx(8 * 989e12 * 0.4));
  CHECK(p.hosts[1].speed_flops == doctest::Approx(165e12 * 0.35));
  CHECK(p.hosts[2].speed_flops == doctest::Approx(362e12 * 0.4));
  REQUIRE(p.accelerators.size() == 3);  // the file's own, then the catalogue's in the order hosts name them
  CHECK(p.accelerators[0].name == "rtx4090");
  CHECK(p.accelerators[1].name == "h100");
  CHECK(p.accelerators[2].name == "l40s");
  REQUIRE(p.accelerator("h100") != nullptr);
  CHECK(p.accelerator("h100")->peak_flops == 989e12);
  CHECK(p.accelerator("h100")->efficiency == 0.4);

  // The resolved platform defines what the run used, and reads back to the same platform.
  const std::string resolved = s.resolved_yaml();
  CAPTURE(resolved);
  // (Efficiencies print as yaml-cpp writes doubles: 0.4 as 0.40000000000000002.)
  CHECK(contains(resolved, "accelerators:\n  rtx4090:\n    peak: 165 TFLOPS\n    efficiency: 0.3"));
  CHECK(contains(resolved, "\n  h100:\n    peak: 989 TFLOPS\n    efficiency: 0.4"));
  CHECK(contains(resolved, "\n  l40s:\n    peak: 362 TFLOPS\n    efficiency: 0.4"));
  CHECK(resolved.find("rtx4090:") < resolved.find("h100:"));
  CHECK(resolved.find("h100:") < resolved.find("l40s:"));
  CHECK(resolved.find("l40s:") < resolved.find("sites:"));
  Section again = Section::load_string(resolved, "resolved.yaml");
  PlatformSpec q = parse_platform(again);
  REQUIRE(q.hosts.size() == p.hosts.size());
  for (size_t i = 0; i < p.hosts.size(); ++i) CHECK(q.hosts[i].speed_flops == p.hosts[i].speed_flops);
  CHECK(again.resolved_yaml() == resolved);

  // Without any accelerators map.
  PlatformSpec bare = parse("hosts:\n  - {name: a, accelerator: mi300x, " + links + "}\n");
  CHECK(bare.hosts[0].speed_flops == doctest::Approx(1307.4e12 * 0.4));
}

TEST_CASE("platform: an accelerators entry overrides the catalogue's, whole or in part") {
  const std::string links = "uplink: {bandwidth: 1 Gbps, latency: 1 ms}, downlink: {bandwidth: 1 Gbps, latency: 1 ms}";
  Section s = Section::load_string("accelerators:\n"
                                   "  h100: {efficiency: 0.5}\n"          // keeps the catalogue's peak
                                   "  rtx5090: {peak: 400 TFLOPS}\n"      // keeps the catalogue's efficiency
                                   "  a100: {peak: 300 TFLOPS, efficiency: 0.3}\n"
                                   "hosts:\n"
                                   "  - {name: a, accelerator: h100, " + links + "}\n"
                                   "  - {name: b, accelerator: rtx5090, " + links + "}\n"
                                   "  - {name: c, accelerator: a100, " + links + "}\n",
                                   "p.yaml");
  PlatformSpec p = parse_platform(s);
  CHECK(p.accelerator("h100")->peak_flops == 989e12);
  CHECK(p.accelerator("h100")->efficiency == 0.5);
  CHECK(p.accelerator("rtx5090")->peak_flops == 400e12);
  CHECK(p.accelerator("rtx5090")->efficiency == 0.35);
  CHECK(p.hosts[2].speed_flops == doctest::Approx(300e12 * 0.3));
  const std::string resolved = s.resolved_yaml();
  CAPTURE(resolved);
  CHECK(contains(resolved, "  h100:\n    peak: 989 TFLOPS\n    efficiency: 0.5\n"));
  CHECK(contains(resolved, "  rtx5090:\n    peak: 400 TFLOPS\n    efficiency: 0.3"));

  // A name the catalogue lacks still needs both.
  ConfigError e = parse_error("accelerators:\n  gpu: {efficiency: 0.4}\n"
                              "hosts:\n  - {name: a, accelerator: gpu, " + links + "}\n");
  CHECK(e.key() == "accelerators.gpu.peak");
  CHECK(contains(e.what(), "is required"));
  // An override is checked as any entry.
  ConfigError high = parse_error("accelerators:\n  h100: {efficiency: 1.5}\n"
                                 "hosts:\n  - {name: a, accelerator: h100, " + links + "}\n");
  CHECK(high.key() == "accelerators.h100.efficiency");
}

TEST_CASE("platform: naming the catalogue's entry resolves to the same bytes as writing it out") {
  // platforms/opendiloco-3-countries.yaml dropped its hand-written h100 entry: its runs keep their hash.
  const std::string hosts = "sites:\n  eu: {lan: {bandwidth: 100 Gbps, latency: 5 us}}\n"
                            "hosts:\n  - {name: ca, site: eu, accelerator: h100, gpus: 8}\n"
                            "  - {name: fi, site: eu, accelerator: h100, gpus: 8}\n";
  Section written = Section::load_string("accelerators:\n  h100: {peak: 989 TFLOPS, efficiency: 0.4}\n" + hosts, "p.yaml");
  Section named = Section::load_string(hosts, "p.yaml");
  PlatformSpec a = parse_platform(written);
  PlatformSpec b = parse_platform(named);
  CHECK(a.hosts[1].speed_flops == b.hosts[1].speed_flops);
  CHECK(written.resolved_yaml() == named.resolved_yaml());
}

TEST_CASE("platform: every catalogue entry is well formed") {
  std::set<std::string> names;
  for (const auto& a : locosim::accelerator_catalog()) {
    CAPTURE(a.name);
    CHECK(names.insert(a.name).second);
    const auto peak = locosim::parse_quantity(a.peak, locosim::Quantity::flops);
    REQUIRE(peak.has_value());
    CHECK(*peak >= 50e12);   // every entry is a training accelerator ...
    CHECK(*peak <= 5e15);    // ... of one device, dense
    CHECK(a.efficiency > 0);
    CHECK(a.efficiency <= 1);
    CHECK(std::string(a.source).size() > 20);
    CHECK(contains(locosim::accelerator_catalog_table(), std::string("  ") + a.name + ": "));
    CHECK(locosim::catalog_accelerator(a.name) == &a);
  }
  CHECK(locosim::catalog_accelerator("h1000") == nullptr);
  // The figures that platforms/*.yaml write by hand.
  CHECK(*locosim::parse_quantity(locosim::catalog_accelerator("h100")->peak, locosim::Quantity::flops) == 989e12);
  CHECK(*locosim::parse_quantity(locosim::catalog_accelerator("a100")->peak, locosim::Quantity::flops) == 312e12);
  CHECK(*locosim::parse_quantity(locosim::catalog_accelerator("rtx3090")->peak, locosim::Quantity::flops) == 71e12);
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
