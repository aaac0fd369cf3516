// Simulated collectives: the ring all-reduce's closed-form time, real numerics, overlap with compute.
// SimGrid allows one Engine per process: each TEST_CASE creates at most one (ctest runs each case in
// a process of its own; running this binary without --test-case runs them all in one and aborts).
#include "sim/collectives.hpp"

#include <simgrid/s4u.hpp>

#include "config/section.hpp"
#include "sim/platform.hpp"
#include "sim/sim_transport.hpp"
#include "tests/doctest_torch.hpp"

namespace sg4 = simgrid::s4u;
using namespace locosim;

namespace {

// K identical hosts, each with its own access links of `mbps` each way and `latency_ms` each way.
PlatformSpec identical_hosts(int k, double mbps, double latency_ms) {
  std::string yaml = "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\nhosts:\n";
  yaml += "  - {name: h, accelerator: gpu, count: " + std::to_string(k) + ", uplink: {bandwidth: " +
          std::to_string(mbps) + " Mbps, latency: " + std::to_string(latency_ms) + " ms}, downlink: {bandwidth: " +
          std::to_string(mbps) + " Mbps, latency: " + std::to_string(latency_ms) + " ms}}\n";
  Section s = Section::load_string(yaml, "identical.yaml");
  return parse_platform(s);
}

struct Sim {
  int argc = 1;
  char name[5] = "test";
  char* argv[2] = {name, nullptr};
  sg4::Engine engine{&argc, argv};
  BuiltPlatform platform;
  explicit Sim(const PlatformSpec& spec) {
    configure_network_model(engine);
    platform = build_platform(spec);
  }
};

}  // namespace

TEST_CASE("a ring all-reduce of S bytes over K identical hosts takes 2(K-1)/K·S/B + 2(K-1)·latency") {
  const int k = 4;
  const double bytes = 100e6, mbps = 100, one_way_latency_s = 2 * 5e-3;  // uplink + downlink latency
  Sim sim(identical_hosts(k, mbps, 5));
  Recorder recorder;
  std::vector<double> finished(k);
  for (int r = 0; r < k; ++r) {
    sg4::Actor::create("r" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      ring_all_reduce_flows(r, k, "t", bytes, recorder);
      finished[r] = sg4::Engine::get_clock();
    });
  }
  sim.engine.run();
  const double expected = 2.0 * (k - 1) / k * bytes * 8 / (mbps * 1e6) + 2 * (k - 1) * one_way_latency_s;
  for (double t : finished) CHECK(t == doctest::Approx(expected).epsilon(0.01));
  // Every rank sent and received 2(K-1)/K · S bytes.
  double sent = 0;
  for (const auto& e : recorder.events()) sent += e.kind == EventKind::send && e.worker == 0 ? e.bytes : 0;
  CHECK(sent == doctest::Approx(2.0 * (k - 1) / k * bytes).epsilon(1e-6));
}

TEST_CASE("SimTransport averages for real and overlaps the collective with compute") {
  const int k = 3;
  Sim sim(identical_hosts(k, 8, 0));  // 8 Mbps = 1 MB/s
  Recorder recorder;
  SimWorld world;
  world.hosts = sim.platform.hosts;
  world.recorder = &recorder;
  std::vector<torch::Tensor> results(k);
  std::vector<double> waited(k);
  for (int r = 0; r < k; ++r) {
    sg4::Actor::create("w" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      SimTransport t(world, r);
      std::vector<torch::Tensor> xs = {torch::full({250000}, static_cast<float>(r + 1))};  // 1 MB in fp32
      Pending p = t.all_reduce_mean(xs, Wire{WireFormat::fp32, 1.0});
      t.compute(50e12, [] {});  // 1 s on a 50 TFLOP/s host, while the flows run
      double before = t.now_s();
      p.wait();
      waited[r] = t.now_s() - before;
      results[r] = xs[0];
    });
  }
  sim.engine.run();
  // Ring: 2(K-1)/K · 1 MB at 1 MB/s = 1.33 s; 1 s of it hidden behind compute.
  for (int r = 0; r < k; ++r) {
    CHECK(results[r][0].item<float>() == doctest::Approx(2.0f));
    CHECK(waited[r] == doctest::Approx(4.0 / 3.0 - 1.0).epsilon(0.02));
  }
}
