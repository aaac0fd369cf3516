// For the collectives' tests (collectives_test.cpp, side_pool_test.cpp): platforms of identical hosts
// on their own access links, the links' figures, and the bytes a Recorder saw.
#pragma once
#include <string>

#include "algorithms/recorder.hpp"
#include "config/section.hpp"
#include "sim/platform.hpp"
#include "sim/sim_transport.hpp"

namespace locosim::testing {

inline std::string link(double mbps, double latency_ms) {
  return "{bandwidth: " + std::to_string(mbps) + " Mbps, latency: " + std::to_string(latency_ms) + " ms}";
}

// K identical hosts, each with its own access links (up and down), and an optional relay line.
inline PlatformSpec identical_hosts(int k, double up_mbps, double down_mbps, double latency_ms, const std::string& relay = "") {
  std::string yaml = "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\nhosts:\n";
  yaml += "  - {name: h, accelerator: gpu, count: " + std::to_string(k) + ", uplink: " + link(up_mbps, latency_ms) +
          ", downlink: " + link(down_mbps, latency_ms) + "}\n" + relay;
  Section s = Section::load_string(yaml, "identical.yaml");
  return parse_platform(s);
}

// The acceptance platform: workers on 10 Mbps up / 100 Mbps down lines (10 ms each way) and a
// well-connected relay (10 Gbps each way, 1 ms).
inline const double kUpBps = 10e6, kDownBps = 100e6, kWorkerLatencyS = 0.010, kRelayLatencyS = 0.001;
inline const std::string kRelay = "relay: {uplink: " + link(10000, 1) + ", downlink: " + link(10000, 1) + "}\n";

// A world that never fails over `platform`, its sides kept in `sides`, all-reducing through the relay.
inline void kept_sides_relay_world(SimWorld& world, const BuiltPlatform& platform, Recorder& recorder, SidePool& sides) {
  world.hosts = platform.hosts;
  world.recorder = &recorder;
  world.relay = platform.relay;
  world.collectives.all_reduce = AllReduceAlgorithm::relay;
  world.sides = &sides;
}

// Bytes of `kind` events of `worker` (any worker if -1) to or from `peer` (any peer if -1).
inline double bytes_of(const Recorder& recorder, EventKind kind, int worker, int peer = -1) {
  double total = 0;
  for (const auto& e : recorder.events()) {
    if (e.kind == kind && (worker < 0 || e.worker == worker) && (peer < 0 || e.peer == peer)) total += e.bytes;
  }
  return total;
}

}  // namespace locosim::testing
