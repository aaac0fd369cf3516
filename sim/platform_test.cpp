// Tests of the SimGrid platform builder and of the network model's timings.
//
// SimGrid allows ONE Engine per process (a second one aborts). ctest runs each TEST_CASE in its own
// process (doctest_discover_tests), so each TEST_CASE below creates at most one Engine. Running this
// binary by hand without --test-case runs them all in one process: do that only with a filter that
// selects a single Engine-creating case.
#include "sim/platform.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include <string>
#include <vector>

#include "config/platform.hpp"
#include "config/section.hpp"
#include "tests/doctest_torch.hpp"

namespace sg4 = simgrid::s4u;
using locosim::PlatformSpec;

namespace {

PlatformSpec parse(const std::string& yaml) {
  locosim::Section s = locosim::Section::load_string(yaml, "test.yaml");
  return locosim::parse_platform(s);
}

// A host with a consumer-like asymmetric link (10 Mbps up, 100 Mbps down, 10 ms each way) and two
// fast symmetric peers (10 Gbps, no latency), so the slow host's link is every route's bottleneck.
const char* kSlowAndFast =
    "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
    "hosts:\n"
    "  - {name: slow, accelerator: gpu, uplink: {bandwidth: 10 Mbps, latency: 10 ms},\n"
    "     downlink: {bandwidth: 100 Mbps, latency: 10 ms}}\n"
    "  - {name: fast, accelerator: gpu, count: 2, uplink: {bandwidth: 10 Gbps, latency: 0 s},\n"
    "     downlink: {bandwidth: 10 Gbps, latency: 0 s}}\n";

// Two sites, eu and us, each with a LAN and access links, joined by a wan entry from eu to us.
const char* kTwoSitesAndWan =
    "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
    "sites:\n"
    "  eu: {lan: {bandwidth: 100 Gbps, latency: 5 us}, uplink: {bandwidth: 1 Gbps, latency: 5 ms},\n"
    "       downlink: {bandwidth: 2 Gbps, latency: 6 ms}}\n"
    "  us: {lan: {bandwidth: 100 Gbps, latency: 5 us}, uplink: {bandwidth: 1 Gbps, latency: 5 ms},\n"
    "       downlink: {bandwidth: 2 Gbps, latency: 6 ms}}\n"
    "wan:\n"
    "  - {from: eu, to: us, bandwidth: 935 Mbps, latency: 40 ms}\n";

struct TestEngine {
  int argc = 1;
  char arg0[5] = "test";
  char* argv[2] = {arg0, nullptr};
  sg4::Engine engine{&argc, argv};
  TestEngine() { locosim::configure_network_model(engine); }
};

int payload = 0;  // what travels is irrelevant: only the simulated size counts

// SimGrid's route from endpoint i to endpoint j (hosts, then the relay) is route_link_names(spec, i, j),
// and its latency the sum of its links'.
void check_route(const PlatformSpec& spec, size_t i, sg4::Host* from, size_t j, sg4::Host* to) {
  CAPTURE(i);
  CAPTURE(j);
  std::vector<sg4::Link*> links;
  double latency_s = 0;
  from->route_to(to, links, &latency_s);
  std::vector<std::string> names;
  double expected_latency_s = 0;
  for (const auto* l : links) {
    names.push_back(l->get_name());
    expected_latency_s += l->get_latency();
  }
  CHECK(names == locosim::route_link_names(spec, i, j));
  CHECK(latency_s == doctest::Approx(expected_latency_s));
}

}  // namespace

TEST_CASE("sim platform: a lone transfer takes bytes/bandwidth + latency in both directions") {
  TestEngine t;
  locosim::BuiltPlatform built = locosim::build_platform(parse(kSlowAndFast));
  sg4::Host* slow = built.hosts[0];
  sg4::Host* fast = built.hosts[1];
  const double size_bytes = 10e6;
  double up_s = -1, down_s = -1;

  sg4::Actor::create("slow", slow, [&] {
    double t0 = sg4::Engine::get_clock();
    sg4::Mailbox::by_name("to-fast")->put(&payload, size_bytes);
    double t1 = sg4::Engine::get_clock();
    sg4::Mailbox::by_name("to-slow")->get<int>();
    up_s = t1 - t0;
    down_s = sg4::Engine::get_clock() - t1;
  });
  sg4::Actor::create("fast", fast, [&] {
    sg4::Mailbox::by_name("to-fast")->get<int>();
    sg4::Mailbox::by_name("to-slow")->put(&payload, size_bytes);
  });
  t.engine.run();

  // Up: the slow host's 10 Mbps uplink; down: its 100 Mbps downlink. Latency: 10 ms + 0 ms.
  CHECK(up_s == doctest::Approx(size_bytes * 8 / 10e6 + 0.010).epsilon(0.001));      // 8.01 s
  CHECK(down_s == doctest::Approx(size_bytes * 8 / 100e6 + 0.010).epsilon(0.001));   // 0.81 s
}

TEST_CASE("sim platform: concurrent flows share an uplink fairly, and a finished flow frees its share") {
  TestEngine t;
  locosim::BuiltPlatform built = locosim::build_platform(parse(kSlowAndFast));
  double small_done_s = -1, large_done_s = -1;

  // The slow host sends 5 MB to one peer and 10 MB to the other, at once, over its 10 Mbps uplink.
  sg4::Actor::create("slow", built.hosts[0], [&] {
    sg4::CommPtr small = sg4::Mailbox::by_name("to-fast-0")->put_async(&payload, 5e6);
    sg4::CommPtr large = sg4::Mailbox::by_name("to-fast-1")->put_async(&payload, 10e6);
    small->wait();
    small_done_s = sg4::Engine::get_clock();
    large->wait();
    large_done_s = sg4::Engine::get_clock();
  });
  for (int i = 0; i < 2; ++i) {
    std::string box = "to-fast-" + std::to_string(i);
    sg4::Actor::create(box, built.hosts[1 + i], [box] { sg4::Mailbox::by_name(box)->get<int>(); });
  }
  t.engine.run();

  // Each flow gets 5 Mbps: the 5 MB one ends at 8 s (+10 ms latency). The 10 MB one has 5 MB left,
  // which it then sends alone at 10 Mbps in 4 s.
  CHECK(small_done_s == doctest::Approx(5e6 * 8 / 5e6 + 0.010).epsilon(0.001));            // 8.01 s
  CHECK(large_done_s == doctest::Approx(5e6 * 8 / 5e6 + 5e6 * 8 / 10e6 + 0.010).epsilon(0.001));  // 12.01 s
}

TEST_CASE("sim platform: at a shared bottleneck, shares are inversely proportional to route latency (CM02)") {
  TestEngine t;
  // The slow host (10 Mbps up, 10 ms) sends 10 MB to a peer with no latency (route: 10 ms) and 10 MB to
  // one with 30 ms (route: 40 ms). CM02 weights each flow by its route latency, like TCP's RTT
  // unfairness: once both flows are past their latency, the near one gets 4/5 of the uplink.
  locosim::BuiltPlatform built = locosim::build_platform(parse(
      "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
      "hosts:\n"
      "  - {name: slow, accelerator: gpu, uplink: {bandwidth: 10 Mbps, latency: 10 ms},\n"
      "     downlink: {bandwidth: 100 Mbps, latency: 10 ms}}\n"
      "  - {name: near, accelerator: gpu, uplink: {bandwidth: 10 Gbps, latency: 0 s},\n"
      "     downlink: {bandwidth: 10 Gbps, latency: 0 s}}\n"
      "  - {name: far, accelerator: gpu, uplink: {bandwidth: 10 Gbps, latency: 30 ms},\n"
      "     downlink: {bandwidth: 10 Gbps, latency: 30 ms}}\n"));
  double near_done_s = -1, far_done_s = -1;
  sg4::Actor::create("slow", built.hosts[0], [&] {
    sg4::CommPtr near = sg4::Mailbox::by_name("near")->put_async(&payload, 10e6);
    sg4::CommPtr far = sg4::Mailbox::by_name("far")->put_async(&payload, 10e6);
    near->wait();
    near_done_s = sg4::Engine::get_clock();
    far->wait();
    far_done_s = sg4::Engine::get_clock();
  });
  sg4::Actor::create("near", built.hosts[1], [] { sg4::Mailbox::by_name("near")->get<int>(); });
  sg4::Actor::create("far", built.hosts[2], [] { sg4::Mailbox::by_name("far")->get<int>(); });
  t.engine.run();

  // Bytes per second: the uplink carries 1.25e6. Near alone from 0.01 s to 0.04 s (37.5 kB), then
  // near 1e6 and far 0.25e6 until near is done; far then has the whole uplink.
  const double near_expected_s = 0.04 + (10e6 - 0.03 * 1.25e6) / 1e6;                          // 10.0025 s
  const double far_expected_s = near_expected_s + (10e6 - (near_expected_s - 0.04) * 0.25e6) / 1.25e6;  // 16.01 s
  CHECK(near_done_s == doctest::Approx(near_expected_s).epsilon(0.001));
  CHECK(far_done_s == doctest::Approx(far_expected_s).epsilon(0.001));
}

TEST_CASE("sim platform: SimGrid hosts, links and routes match the spec") {
  PlatformSpec spec = parse(
      std::string(kTwoSitesAndWan) +
      "hosts:\n"
      "  - {name: home, accelerator: gpu, count: 2, uplink: {bandwidth: 20 Mbps, latency: 10 ms},\n"
      "     downlink: {bandwidth: 200 Mbps, latency: 11 ms}}\n"
      "  - {name: dc, site: eu, accelerator: gpu, gpus: 8, count: 2}\n"
      "  - {name: lab, site: us, accelerator: gpu}\n");
  TestEngine t;
  locosim::BuiltPlatform built = locosim::build_platform(spec);
  REQUIRE(built.hosts.size() == spec.hosts.size());

  for (size_t i = 0; i < spec.hosts.size(); ++i) {
    CHECK(built.hosts[i]->get_name() == spec.hosts[i].name);
    CHECK(built.hosts[i]->get_speed() == doctest::Approx(spec.hosts[i].speed_flops));
  }
  CHECK(built.hosts[2]->get_speed() == doctest::Approx(8 * 100e12 * 0.5));

  sg4::Link* up = sg4::Link::by_name("home-0.up");
  CHECK(up->get_bandwidth() == doctest::Approx(20e6 / 8));  // SimGrid counts bytes per second
  CHECK(up->get_latency() == doctest::Approx(0.010));
  CHECK(up->get_sharing_policy() == sg4::Link::SharingPolicy::SHARED);
  CHECK(sg4::Link::by_name("home-0.down")->get_bandwidth() == doctest::Approx(200e6 / 8));
  CHECK(sg4::Link::by_name("eu.down")->get_latency() == doctest::Approx(0.006));
  CHECK(sg4::Link::by_name("wan.us->eu")->get_bandwidth() == doctest::Approx(935e6 / 8));

  for (size_t i = 0; i < spec.hosts.size(); ++i) {
    for (size_t j = 0; j < spec.hosts.size(); ++j) {
      if (i == j) continue;
      check_route(spec, i, built.hosts[i], j, built.hosts[j]);
    }
  }
}

TEST_CASE("sim platform: route_link_names for each kind of route") {
  PlatformSpec spec = parse(
      "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
      "sites:\n"
      "  eu: {lan: {bandwidth: 100 Gbps, latency: 5 us}, uplink: {bandwidth: 1 Gbps, latency: 5 ms},\n"
      "       downlink: {bandwidth: 1 Gbps, latency: 5 ms}}\n"
      "  us: {lan: {bandwidth: 100 Gbps, latency: 5 us}, uplink: {bandwidth: 1 Gbps, latency: 5 ms},\n"
      "       downlink: {bandwidth: 1 Gbps, latency: 5 ms}}\n"
      "  asia: {lan: {bandwidth: 100 Gbps, latency: 5 us}, uplink: {bandwidth: 1 Gbps, latency: 5 ms},\n"
      "         downlink: {bandwidth: 1 Gbps, latency: 5 ms}}\n"
      "wan:\n"
      "  - {from: eu, to: us, bandwidth: 935 Mbps, latency: 40 ms}\n"
      "  - {from: asia, to: eu, bandwidth: 127 Mbps, latency: 150 ms, both_ways: false}\n"
      "hosts:\n"
      "  - {name: home, accelerator: gpu, count: 2, uplink: {bandwidth: 20 Mbps, latency: 10 ms},\n"
      "     downlink: {bandwidth: 200 Mbps, latency: 10 ms}}\n"                    // 0 home-0, 1 home-1
      "  - {name: dc, site: eu, accelerator: gpu, count: 2}\n"                    // 2 dc-0, 3 dc-1
      "  - {name: lab, site: us, accelerator: gpu}\n"                             // 4 lab
      "  - {name: tokyo, site: asia, accelerator: gpu}\n");                       // 5 tokyo
  using Names = std::vector<std::string>;
  // Both outside sites: the sender's uplink, the receiver's downlink.
  CHECK(locosim::route_link_names(spec, 0, 1) == Names{"home-0.up", "home-1.down"});
  CHECK(locosim::route_link_names(spec, 1, 0) == Names{"home-1.up", "home-0.down"});
  // Same site: the LAN only.
  CHECK(locosim::route_link_names(spec, 2, 3) == Names{"eu.lan.dc-0.up", "eu.lan.dc-1.down"});
  // Different sites with a wan entry (both ways by default): the wan path replaces the access links.
  CHECK(locosim::route_link_names(spec, 2, 4) == Names{"eu.lan.dc-0.up", "wan.eu->us", "us.lan.lab.down"});
  CHECK(locosim::route_link_names(spec, 4, 3) == Names{"us.lan.lab.up", "wan.us->eu", "eu.lan.dc-1.down"});
  // A one-way wan entry: asia→eu uses it, eu→asia goes through the access links.
  CHECK(locosim::route_link_names(spec, 5, 2) == Names{"asia.lan.tokyo.up", "wan.asia->eu", "eu.lan.dc-0.down"});
  CHECK(locosim::route_link_names(spec, 2, 5) ==
        Names{"eu.lan.dc-0.up", "eu.up", "asia.down", "asia.lan.tokyo.down"});
  // Different sites without a wan entry: both access links.
  CHECK(locosim::route_link_names(spec, 4, 5) == Names{"us.lan.lab.up", "us.up", "asia.down", "asia.lan.tokyo.down"});
  // Outside a site to a site, and back.
  CHECK(locosim::route_link_names(spec, 0, 2) == Names{"home-0.up", "eu.down", "eu.lan.dc-0.down"});
  CHECK(locosim::route_link_names(spec, 2, 0) == Names{"eu.lan.dc-0.up", "eu.up", "home-0.down"});
}

TEST_CASE("sim platform: the relay is a SimGrid host with routes to and from every worker") {
  PlatformSpec spec = parse(
      "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
      "sites:\n"
      "  eu: {lan: {bandwidth: 100 Gbps, latency: 5 us}, uplink: {bandwidth: 1 Gbps, latency: 5 ms},\n"
      "       downlink: {bandwidth: 2 Gbps, latency: 6 ms}}\n"
      "hosts:\n"
      "  - {name: home, accelerator: gpu, uplink: {bandwidth: 20 Mbps, latency: 10 ms},\n"
      "     downlink: {bandwidth: 200 Mbps, latency: 11 ms}}\n"                      // 0 home
      "  - {name: dc, site: eu, accelerator: gpu}\n"                                // 1 dc
      "relay: {uplink: {bandwidth: 10 Gbps, latency: 1 ms}, downlink: {bandwidth: 5 Gbps, latency: 2 ms}}\n");
  using Names = std::vector<std::string>;
  // The relay is endpoint 2 and its links follow a host's rules.
  CHECK(locosim::route_link_names(spec, 0, 2) == Names{"home.up", "relay.down"});
  CHECK(locosim::route_link_names(spec, 2, 1) == Names{"relay.up", "eu.down", "eu.lan.dc.down"});
  CHECK(locosim::route_link_names(spec, 1, 2) == Names{"eu.lan.dc.up", "eu.up", "relay.down"});

  TestEngine t;
  locosim::BuiltPlatform built = locosim::build_platform(spec);
  REQUIRE(built.hosts.size() == 2);  // workers only
  REQUIRE(built.relay != nullptr);
  CHECK(built.relay->get_name() == "relay");
  CHECK(sg4::Link::by_name("relay.down")->get_bandwidth() == doctest::Approx(5e9 / 8));
  std::vector<sg4::Host*> endpoints = {built.hosts[0], built.hosts[1], built.relay};
  for (size_t i = 0; i < endpoints.size(); ++i) {
    for (size_t j = 0; j < endpoints.size(); ++j) {
      if (i == j) continue;
      check_route(spec, i, endpoints[i], j, endpoints[j]);
    }
  }

  // A lone transfer from home to the relay: 10 MB over home's 20 Mbps uplink, 10 ms + 2 ms.
  double up_s = -1;
  sg4::Actor::create("home", built.hosts[0], [&] {
    sg4::Mailbox::by_name("to-relay")->put(&payload, 10e6);
    up_s = sg4::Engine::get_clock();
  });
  sg4::Actor::create("relay", built.relay, [] { sg4::Mailbox::by_name("to-relay")->get<int>(); });
  t.engine.run();
  CHECK(up_s == doctest::Approx(10e6 * 8 / 20e6 + 0.012).epsilon(0.001));  // 4.012 s
}

TEST_CASE("sim platform: a relay on a site's LAN") {
  PlatformSpec spec = parse(
      "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
      "sites:\n"
      "  eu: {lan: {bandwidth: 100 Gbps, latency: 5 us}, uplink: {bandwidth: 1 Gbps, latency: 5 ms},\n"
      "       downlink: {bandwidth: 2 Gbps, latency: 6 ms}}\n"
      "hosts:\n"
      "  - {name: home, accelerator: gpu, uplink: {bandwidth: 20 Mbps, latency: 10 ms},\n"
      "     downlink: {bandwidth: 200 Mbps, latency: 11 ms}}\n"
      "  - {name: dc, site: eu, accelerator: gpu}\n"
      "relay: {site: eu, name: agg}\n");
  using Names = std::vector<std::string>;
  CHECK(locosim::route_link_names(spec, 1, 2) == Names{"eu.lan.dc.up", "eu.lan.agg.down"});
  CHECK(locosim::route_link_names(spec, 0, 2) == Names{"home.up", "eu.down", "eu.lan.agg.down"});
  TestEngine t;
  locosim::BuiltPlatform built = locosim::build_platform(spec);
  REQUIRE(built.relay != nullptr);
  CHECK(built.relay->get_name() == "agg");
  CHECK(sg4::Link::by_name("eu.lan.agg.up")->get_bandwidth() == doctest::Approx(100e9 / 8));
}

// Regression: SimGrid's default Lazy update let 3 of these 4 flows run at 3.3 Gbps through 100 Mbps
// downlinks (see configure_network_model).
TEST_CASE("sim platform: one fast sender to several slower downlinks: each flow keeps to its downlink") {
  TestEngine t;
  locosim::BuiltPlatform built = locosim::build_platform(parse(
      "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
      "hosts:\n"
      "  - {name: server, accelerator: gpu, uplink: {bandwidth: 10 Gbps, latency: 1 ms},\n"
      "     downlink: {bandwidth: 10 Gbps, latency: 1 ms}}\n"
      "  - {name: home, accelerator: gpu, count: 4, uplink: {bandwidth: 10 Mbps, latency: 10 ms},\n"
      "     downlink: {bandwidth: 100 Mbps, latency: 10 ms}}\n"));
  std::vector<double> done_s(4, -1);
  sg4::Actor::create("server", built.hosts[0], [] {
    std::vector<sg4::CommPtr> comms;
    for (int i = 0; i < 4; ++i) comms.push_back(sg4::Mailbox::by_name("to-" + std::to_string(i))->put_async(&payload, 1e6));
    sg4::Comm::wait_all(comms);
  });
  for (int i = 0; i < 4; ++i) {
    sg4::Actor::create("home", built.hosts[1 + i], [&, i] {
      sg4::Mailbox::by_name("to-" + std::to_string(i))->get<int>();
      done_s[i] = sg4::Engine::get_clock();
    });
  }
  t.engine.run();
  for (double d : done_s) CHECK(d == doctest::Approx(1e6 * 8 / 100e6 + 0.011).epsilon(0.001));  // 0.091 s
}

TEST_CASE("sim platform: 10 000 hosts and a relay build, with every route kind as the spec says") {
  // 6 000 homes with their own links, 4 000 in two sites, a relay: routes are O(hosts), not hosts².
  PlatformSpec spec = parse(
      std::string(kTwoSitesAndWan) +
      "hosts:\n"
      "  - {name: home, accelerator: gpu, count: 6000, uplink: {bandwidth: 20 Mbps, latency: 10 ms},\n"
      "     downlink: {bandwidth: 200 Mbps, latency: 11 ms}}\n"
      "  - {name: dc, site: eu, accelerator: gpu, count: 2000}\n"
      "  - {name: lab, site: us, accelerator: gpu, count: 2000}\n"
      "relay: {uplink: {bandwidth: 10 Gbps, latency: 1 ms}, downlink: {bandwidth: 5 Gbps, latency: 2 ms}}\n");
  REQUIRE(spec.hosts.size() == 10000);
  TestEngine t;
  locosim::BuiltPlatform built = locosim::build_platform(spec);
  REQUIRE(built.hosts.size() == 10000);
  REQUIRE(built.relay != nullptr);
  CHECK(t.engine.get_host_count() == 10001);

  auto endpoint = [&](size_t i) { return i < built.hosts.size() ? built.hosts[i] : built.relay; };
  // Pairs of every kind: home↔home, home↔site, within a site, across the WAN, to and from the relay.
  const size_t relay = 10000;
  const std::vector<std::pair<size_t, size_t>> pairs = {
      {0, 5999}, {5999, 0},    {17, 6000}, {6000, 17},   {6000, 7999}, {7999, 6001}, {6000, 8000},
      {9999, 7000}, {0, relay}, {relay, 0}, {relay, 9999}, {8123, relay}};
  for (const auto& [i, j] : pairs) check_route(spec, i, endpoint(i), j, endpoint(j));
}
