// The tcp network model's timings (network: {model: tcp}), by hand from its calibrated factors.
// One Engine per TEST_CASE (ctest runs each case in its own process; see platform_test.cpp).
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include <string>

#include "config/network_model.hpp"
#include "config/platform.hpp"
#include "config/section.hpp"
#include "sim/platform.hpp"
#include "sim/sim_test_util.hpp"
#include "tests/doctest_torch.hpp"

namespace sg4 = simgrid::s4u;

namespace {

// Two home hosts, 20 Mbps up / 100 Mbps down, `latency` each way on every link.
std::string two_homes(const std::string& latency) {
  return "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
         "hosts:\n"
         "  - {name: home, accelerator: gpu, count: 2, uplink: {bandwidth: 20 Mbps, latency: " + latency + "},\n"
         "     downlink: {bandwidth: 100 Mbps, latency: " + latency + "}}\n";
}

locosim::NetworkModelSpec tcp_model(double bandwidth_factor, bool crosstraffic, double window_bytes) {
  locosim::NetworkModelSpec m;
  m.kind = locosim::NetworkModelKind::tcp;
  m.tcp.bandwidth_factor = bandwidth_factor;
  m.tcp.crosstraffic = crosstraffic;
  m.tcp.window_bytes = window_bytes;
  return m;
}

struct TcpEngine {
  int argc = 1;
  char arg0[5] = "test";
  char* argv[2] = {arg0, nullptr};
  sg4::Engine engine{&argc, argv};
  explicit TcpEngine(const locosim::NetworkModelSpec& m) { locosim::configure_network_model(engine, m); }
};

int tcp_payload = 0;

// Host 0 sends `bytes` to host 1 and, if `both`, host 1 sends as much to host 0 at the same time.
// Returns when host 0's transfer ends.
double transfer_s(const locosim::BuiltPlatform& built, double bytes, bool both) {
  double done = -1;
  sg4::Actor::create("a", built.hosts[0], [&] {
    sg4::CommPtr out = sg4::Mailbox::by_name("to-b")->put_async(&tcp_payload, bytes);
    if (both) sg4::Mailbox::by_name("to-a")->get<int>();
    out->wait();
    done = sg4::Engine::get_clock();
  });
  sg4::Actor::create("b", built.hosts[1], [&] {
    sg4::CommPtr out = both ? sg4::Mailbox::by_name("to-a")->put_async(&tcp_payload, bytes) : nullptr;
    sg4::Mailbox::by_name("to-b")->get<int>();
    if (out) out->wait();
  });
  sg4::Engine::get_instance()->run();
  return done;
}

}  // namespace

TEST_CASE("network model tcp: a lone transfer moves at bandwidth_factor of its bottleneck") {
  TcpEngine t(tcp_model(0.9564, true, 3 * 1048576.0));
  locosim::BuiltPlatform built = locosim::build_platform(locosim::platform_from_yaml(two_homes("1 ms")));
  // 4 MB through host 0's 20 Mbps uplink at 95.64% (headers), plus 1 ms + 1 ms. The acks ride host 1's
  // uplink and host 0's downlink, which nothing else uses. The window (3 MiB per 4 ms round trip) does
  // not bind.
  CHECK(transfer_s(built, 4e6, false) == doctest::Approx(4e6 * 8 / (0.9564 * 20e6) + 0.002).epsilon(1e-6));
}

TEST_CASE("network model tcp: acknowledgements take 5% of a flow's rate on its reverse route") {
  TcpEngine t(tcp_model(0.9564, true, 3 * 1048576.0));
  locosim::BuiltPlatform built = locosim::build_platform(locosim::platform_from_yaml(two_homes("1 ms")));
  // Both hosts send 4 MB at once: each uplink carries one flow at rate x and the other's acks at
  // 0.05·x, so x = 0.9564 · 20 Mbps / 1.05 (measured on Linux TCP through tbf: 0.917 of 20 Mbps).
  CHECK(transfer_s(built, 4e6, true) ==
        doctest::Approx(4e6 * 8 * 1.05 / (0.9564 * 20e6) + 0.002).epsilon(1e-6));
}

TEST_CASE("network model tcp without cross-traffic: an exchange is two lone transfers") {
  TcpEngine t(tcp_model(0.9564, false, 3 * 1048576.0));
  locosim::BuiltPlatform built = locosim::build_platform(locosim::platform_from_yaml(two_homes("1 ms")));
  CHECK(transfer_s(built, 4e6, true) == doctest::Approx(4e6 * 8 / (0.9564 * 20e6) + 0.002).epsilon(1e-6));
}

TEST_CASE("network model tcp: on a long path, a flow moves at most one window per round trip") {
  // 256 KiB window, 100 ms each way on both links: route latency 200 ms, so at most
  // 256 KiB / 0.4 s = 5.2 Mbps of wire bytes, far below the 20 Mbps uplink; bandwidth_factor of it is
  // payload (the window counts the frames' headers too).
  TcpEngine t(tcp_model(0.9564, true, 262144.0));
  locosim::BuiltPlatform built = locosim::build_platform(locosim::platform_from_yaml(two_homes("100 ms")));
  CHECK(transfer_s(built, 4e6, false) == doctest::Approx(4e6 / (0.9564 * 262144.0 / 0.4) + 0.2).epsilon(1e-6));
}

TEST_CASE("network model ideal: the same exchange takes bytes/bandwidth + latency") {
  TcpEngine t(locosim::NetworkModelSpec{});
  locosim::BuiltPlatform built = locosim::build_platform(locosim::platform_from_yaml(two_homes("1 ms")));
  CHECK(transfer_s(built, 4e6, true) == doctest::Approx(4e6 * 8 / 20e6 + 0.002).epsilon(1e-6));
}
