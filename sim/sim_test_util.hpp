// For simulator tests: a platform from YAML text, and an Engine with that platform built.
// SimGrid allows one Engine per process: make at most one TestSim per TEST_CASE (ctest runs each case
// in a process of its own).
#pragma once
#include <simgrid/s4u.hpp>

#include <string>

#include "config/section.hpp"
#include "sim/platform.hpp"

namespace locosim {

inline PlatformSpec platform_from_yaml(const std::string& yaml, const std::string& file = "test.yaml") {
  Section s = Section::load_string(yaml, file);
  return parse_platform(s);
}

// Two sites of two hosts (ranks 0-1 in eu, 2-3 in us) on a 10 Gbps, 5 us LAN, joined by a 100 Mbps,
// 20 ms WAN; and a relay with its own 10 Gbps, 1 ms links.
inline const char* const kTwoSites =
    "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
    "sites:\n"
    "  eu: {lan: {bandwidth: 10 Gbps, latency: 5 us}, uplink: {bandwidth: 100 Mbps, latency: 20 ms},\n"
    "       downlink: {bandwidth: 100 Mbps, latency: 20 ms}}\n"
    "  us: {lan: {bandwidth: 10 Gbps, latency: 5 us}, uplink: {bandwidth: 100 Mbps, latency: 20 ms},\n"
    "       downlink: {bandwidth: 100 Mbps, latency: 20 ms}}\n"
    "wan:\n"
    "  - {from: eu, to: us, bandwidth: 100 Mbps, latency: 20 ms}\n"
    "hosts:\n"
    "  - {name: e, site: eu, accelerator: gpu, count: 2}\n"
    "  - {name: u, site: us, accelerator: gpu, count: 2}\n"
    "relay: {uplink: {bandwidth: 10 Gbps, latency: 1 ms}, downlink: {bandwidth: 10 Gbps, latency: 1 ms}}\n";

struct TestSim {
  int argc = 1;
  char name[5] = "test";
  char* argv[2] = {name, nullptr};
  simgrid::s4u::Engine engine{&argc, argv};
  BuiltPlatform platform;
  explicit TestSim(const PlatformSpec& spec, const WorldSpec& world = {}) {
    configure_network_model(engine);
    platform = build_platform(spec, world);
  }
};

}  // namespace locosim
