// Tests of the accelerators a platform names (config/accelerator_catalog.hpp): the catalogue's
// entries, a scenario's own entries over them, and resolved.yaml's peak and efficiency.
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

using locosim::ConfigError;
using locosim::parse_platform;
using locosim::PlatformSpec;
using locosim::Section;

using namespace platform_test;

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
