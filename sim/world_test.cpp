// The changing world on SimGrid's machinery: speed and bandwidth profiles change times exactly as the
// flow model says, a host that goes off fails the collectives it is in for every member (after the
// failure timeout), a cut link fails the collective crossing it, and a redo among the survivors
// completes with their mean. One Engine per TEST_CASE (ctest runs each in a process of its own).
#include "sim/world.hpp"

#include <simgrid/s4u.hpp>

#include "config/section.hpp"
#include "sim/collectives.hpp"
#include "sim/sim_test_util.hpp"
#include "sim/sim_transport.hpp"
#include "tests/doctest_torch.hpp"

namespace sg4 = simgrid::s4u;
using namespace locosim;

namespace {

// K hosts "h-0".. on 10 Mbps up / 100 Mbps down access links with 10 ms latency each, 1 TFLOP/s each.
PlatformSpec hosts(int k) {
  return platform_from_yaml("accelerators: {gpu: {peak: 1 TFLOPS, efficiency: 1}}\n"
                            "hosts:\n"
                            "  - {name: h, accelerator: gpu, count: " + std::to_string(k) +
                            ", uplink: {bandwidth: 10 Mbps, latency: 10 ms}, downlink: {bandwidth: 100 Mbps, latency: 10 ms}}\n");
}

WorldProfile profile(const std::string& target, WorldResource what, std::vector<std::pair<double, double>> points) {
  WorldProfile p;
  p.target = target;
  p.what = what;
  p.points = std::move(points);
  return p;
}

double end_of(const Recorder& recorder, int worker, EventKind kind) {
  for (const auto& e : recorder.events()) {
    if (e.worker == worker && e.kind == kind) return e.end_s;
  }
  return -1;
}

}  // namespace

TEST_CASE("world: a speed profile stretches compute by the factor it sets, from the time it sets it") {
  WorldSpec world;
  world.profiles.push_back(profile("h-1", WorldResource::host_speed, {{2.0, 0.5}}));
  TestSim sim(hosts(2), world);
  std::vector<double> done(2);
  for (int r = 0; r < 2; ++r) {
    sg4::Actor::create("w", sim.platform.hosts[r], [&, r] {
      sg4::this_actor::execute(10e12);  // 10 s at 1 TFLOP/s
      done[r] = sg4::Engine::get_clock();
    });
  }
  sim.engine.run();
  CHECK(done[0] == doctest::Approx(10.0).epsilon(1e-12));
  CHECK(done[1] == doctest::Approx(2.0 + 8.0 / 0.5).epsilon(1e-12));  // 2 s at full speed, 8 s of work at half
}

TEST_CASE("world: a bandwidth profile changes a transfer's time as the flow model predicts (within 0.1%)") {
  // h-0 sends S bytes to h-1 over [h-0.up, h-1.down]: 10 Mbps is the bottleneck, latency 20 ms.
  // At t1 the uplink drops to 40%: T = t1 + (S − B·(t1 − λ)) / (0.4·B).
  const double S = 10e6, B = 10e6 / 8, lambda = 0.020, t1 = 3.0;
  WorldSpec world;
  world.profiles.push_back(profile("h-0.up", WorldResource::link_bandwidth, {{t1, 0.4}}));
  TestSim sim(hosts(2), world);
  Recorder recorder;
  sg4::Actor::create("a", sim.platform.hosts[0], [&] { mesh_all_gather_flows(0, {0, 1}, "t", S, recorder); });
  sg4::Actor::create("b", sim.platform.hosts[1], [&] { mesh_all_gather_flows(1, {0, 1}, "t", S, recorder); });
  sim.engine.run();
  const double expected = t1 + (S - B * (t1 - lambda)) / (0.4 * B);
  CHECK(end_of(recorder, 0, EventKind::send) == doctest::Approx(expected).epsilon(1e-3));
  CHECK(end_of(recorder, 1, EventKind::send) == doctest::Approx(S / B + lambda).epsilon(1e-3));  // untouched
}

TEST_CASE("world: a latency profile sets the latency a transfer starting after it pays") {
  WorldSpec world;
  world.profiles.push_back(profile("h-0.up", WorldResource::link_latency, {{1.0, 0.5}}));
  TestSim sim(hosts(2), world);
  Recorder recorder;
  const double S = 1e6, B = 10e6 / 8;
  sg4::Actor::create("a", sim.platform.hosts[0], [&] {
    sg4::this_actor::sleep_until(2.0);
    mesh_all_gather_flows(0, {0, 1}, "t", S, recorder);
  });
  sg4::Actor::create("b", sim.platform.hosts[1], [&] {
    sg4::this_actor::sleep_until(2.0);
    mesh_all_gather_flows(1, {0, 1}, "t", S, recorder);
  });
  sim.engine.run();
  CHECK(end_of(recorder, 0, EventKind::send) == doctest::Approx(2.0 + S / B + 0.5 + 0.010).epsilon(1e-3));
}

TEST_CASE("world: the smallest values parse_world accepts reach SimGrid and stretch times as the flow model says") {
  // A subnormal value (1e-310) used to pass `check` and then fail SimGrid's profile parser ("stod"), and
  // a bandwidth of 1e-310 of nominal left a transfer that never ended. What the loader accepts now goes
  // through: 1/1000 of a 1 kbps uplink (1 bps), 1/1000 of a host's speed, a latency of 1 ns, times of 1 ns.
  const PlatformSpec spec = platform_from_yaml(
      "accelerators: {gpu: {peak: 1 TFLOPS, efficiency: 1}}\n"
      "hosts:\n"
      "  - {name: h, accelerator: gpu, count: 2, uplink: {bandwidth: 1 kbps, latency: 10 ms},\n"
      "     downlink: {bandwidth: 100 Mbps, latency: 10 ms}}\n");
  Section top = Section::load_string(
      "world:\n"
      "  events:\n"
      "    - {host: h-1, at: 1 ns, speed: 0.001}\n"
      "    - {link: h-0.up, at: 1 ns, bandwidth: 0.001}\n"
      "    - {link: h-1.down, at: 0 s, latency: 1 ns}\n",
      "s.yaml");
  Section section = top.child("world");
  const WorldSpec world = parse_world(section, spec, 1);
  TestSim sim(spec, world);
  Recorder recorder;
  double computed_s = -1;
  const double S = 10, B = 1e3 / 8 * 0.001, lambda = 0.010 + 1e-9;  // 10 bytes at 0.125 B/s: 80 s
  sg4::Actor::create("a", sim.platform.hosts[0], [&] { mesh_all_gather_flows(0, {0, 1}, "t", S, recorder); });
  sg4::Actor::create("b", sim.platform.hosts[1], [&] { mesh_all_gather_flows(1, {0, 1}, "t", S, recorder); });
  sg4::Actor::create("c", sim.platform.hosts[1], [&] {
    sg4::this_actor::execute(1e9);  // 1 ms at 1 TFLOP/s, 1 s at a thousandth of it
    computed_s = sg4::Engine::get_clock();
  });
  sim.engine.run();
  CHECK(computed_s == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(end_of(recorder, 0, EventKind::send) == doctest::Approx(S / B + lambda).epsilon(1e-3));
}

namespace {

// Three workers all-reduce a tensor holding their rank + 1 (a ring, 30 MB per rank); the
// callback decides what the world does. Returns each rank's outcome of the first attempt, and of a
// redo among the members still in the group.
struct Attempts {
  std::vector<int> first = {-1, -1, -1};   // 1 completed, 0 failed, -1 never returned (lost)
  std::vector<int> redo = {-1, -1, -1};
  std::vector<float> value = {0, 0, 0};     // the mean after the redo
  std::vector<double> noticed_s = {0, 0, 0};
};

Attempts three_workers(const WorldSpec& world_spec, bool host_failure) {
  TestSim sim(hosts(3), world_spec);
  Recorder recorder;
  SimWorld world;
  world.hosts = sim.platform.hosts;
  world.recorder = &recorder;
  world.in_group.assign(3, true);
  world.agree_on_commit = true;
  world.failure_timeout_s = 5;
  if (host_failure) {
    sg4::Host::on_state_change_cb([&](const sg4::Host& h) {
      if (!h.is_on() && &h == sim.platform.hosts[1]) leave_group(world, 1);
    });
  }
  Attempts a;
  std::vector<std::unique_ptr<SimTransport>> transports;
  for (int r = 0; r < 3; ++r) transports.push_back(std::make_unique<SimTransport>(world, r));
  for (int r = 0; r < 3; ++r) {
    sg4::Actor::create("w" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      std::vector<torch::Tensor> xs = {torch::full({7500000}, static_cast<float>(r + 1))};  // 30 MB
      a.first[r] = transports[r]->all_reduce_mean(xs, Wire{WireFormat::fp32, 1.0}).wait();
      a.noticed_s[r] = sg4::Engine::get_clock();
      a.redo[r] = transports[r]->all_reduce_mean(xs, Wire{WireFormat::fp32, 1.0}).wait();
      a.value[r] = xs[0][0].item<float>();
    });
  }
  sim.engine.run();
  return a;
}

}  // namespace

TEST_CASE("world: a host that fails mid-all-reduce fails it for every member and the redo among survivors completes") {
  WorldSpec world;
  world.profiles.push_back(profile("h-1", WorldResource::host_state, {{4.0, 0}}));  // mid-ring (it takes ~40 s)
  const Attempts a = three_workers(world, /*host_failure=*/true);
  CHECK(a.first[0] == 0);
  CHECK(a.first[2] == 0);
  CHECK(a.first[1] == -1);  // its actor died with the host
  CHECK(a.noticed_s[0] == doctest::Approx(4.0 + 5.0));  // failure + timeout
  CHECK(a.redo[0] == 1);
  CHECK(a.redo[2] == 1);
  CHECK(a.value[0] == doctest::Approx((1.0 + 3.0) / 2));  // the survivors' mean; rank 1's input untouched
  CHECK(a.value[2] == doctest::Approx(2.0));
}

TEST_CASE("world: a link cut under an all-reduce fails it for every member, and restored, the redo completes") {
  WorldSpec world;
  world.profiles.push_back(profile("h-2.down", WorldResource::link_state, {{4.0, 0}, {6.0, 1}}));
  const Attempts a = three_workers(world, /*host_failure=*/false);
  for (int r = 0; r < 3; ++r) {
    CAPTURE(r);
    CHECK(a.first[r] == 0);
    CHECK(a.noticed_s[r] == doctest::Approx(9.0));
    CHECK(a.redo[r] == 1);  // the link is back at 6 s, before the redo starts at 9 s
    CHECK(a.value[r] == doctest::Approx(2.0));
  }
}
