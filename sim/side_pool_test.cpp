// The collectives' sides in actors kept for the run (sim/side_pool.hpp) and in their own rank, on a
// world that never fails: the same closed-form times as an actor per side, fewer actors, and a run
// that ends. SimGrid allows one Engine per process: ctest runs each case in a process of its own.
#include "sim/side_pool.hpp"

#include <simgrid/s4u.hpp>

#include "sim/collectives_test_util.hpp"
#include "sim/sim_test_util.hpp"
#include "sim/sim_transport.hpp"
#include "tests/doctest_torch.hpp"

namespace sg4 = simgrid::s4u;
using namespace locosim;
using namespace locosim::testing;
using Sim = TestSim;

TEST_CASE("collectives: kept side actors run side after side in the closed-form times, one actor a host, and let the run end") {
  // SimWorld::sides (a world that never fails): each side goes to an idle kept actor of its host.
  // Three relay all-reduces in a row, the second behind 3 s of compute (its sides end before the wait).
  const int k = 3;
  Sim sim(identical_hosts(k, 8, 8, 0, kRelay));  // 8 Mbps = 1 MB/s each way
  Recorder recorder;
  SidePool sides;
  SimWorld world;
  kept_sides_relay_world(world, sim.platform, recorder, sides);
  bool deadlock = false;
  sg4::Engine::on_deadlock_cb([&] { deadlock = true; });
  int side_actors = 0;
  sg4::Actor::on_creation_cb([&](sg4::Actor& a) { side_actors += a.get_name().rfind("side-", 0) == 0; });
  int done = 0;
  std::vector<std::vector<double>> waited(k);
  for (int r = 0; r < k; ++r) {
    sg4::Actor::create("w" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      SimTransport t(world, r);
      for (int round = 0; round < 3; ++round) {
        std::vector<torch::Tensor> xs = {torch::full({250000}, static_cast<float>(r + 1))};  // 1 MB in fp32
        Pending p = t.all_reduce_mean(xs, Wire{WireFormat::fp32, 1.0});
        if (round == 1) t.compute(150e12, [] {});  // 3 s on a 50 TFLOP/s host
        const double before = t.now_s();
        CHECK(p.wait());
        waited[r].push_back(t.now_s() - before);
        CHECK(xs[0][0].item<float>() == doctest::Approx(2.0f));
      }
      if (++done == k) sides.close();
    });
  }
  sim.engine.run();
  CHECK(done == k);
  CHECK_FALSE(deadlock);  // the kept actors ended with the last worker
  // 3 collectives' 4 sides each, 12 actors made one per side. Here the ranks run the sides of rounds 0
  // and 2 themselves (they wait at once); round 1's, started before the compute, take one kept actor a
  // worker's host; the relay takes two, since its side ends with its last sends, as the next
  // collective's first member arrives.
  CHECK(side_actors == k + 2);
  // S/up + 1 ms to the relay + S/down + 1 ms back, as with an actor per side.
  for (int r = 0; r < k; ++r) {
    REQUIRE(waited[r].size() == 3);
    CHECK(waited[r][0] == doctest::Approx(2.002).epsilon(0.001));
    CHECK(waited[r][1] == 0);
    CHECK(waited[r][2] == doctest::Approx(2.002).epsilon(0.001));
  }
  CHECK(bytes_of(recorder, EventKind::recv, k) == doctest::Approx(3 * k * 1e6));
}

TEST_CASE("collectives: a rank that waits on its collective at once runs its side itself, in the helpers' times") {
  // A world that never fails (SimWorld::sides), a ring: every rank waits as soon as it starts, so no
  // side needs an actor; the times are the ring's closed form, as with a helper per side.
  const int k = 4;
  const double mbps = 8, bytes = 1e6;  // 1 MB/s
  Sim sim(identical_hosts(k, mbps, mbps, 5));
  Recorder recorder;
  SidePool sides;
  SimWorld world;
  world.hosts = sim.platform.hosts;
  world.recorder = &recorder;
  world.collectives.all_reduce = AllReduceAlgorithm::ring;
  world.sides = &sides;
  int side_actors = 0;
  sg4::Actor::on_creation_cb([&](sg4::Actor& a) { side_actors += a.get_name().rfind("side-", 0) == 0; });
  std::vector<double> waited(k);
  int done = 0;
  for (int r = 0; r < k; ++r) {
    sg4::Actor::create("w" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      SimTransport t(world, r);
      std::vector<torch::Tensor> xs = {torch::full({static_cast<int64_t>(bytes / 4)}, static_cast<float>(r))};
      CHECK(t.all_reduce_mean(xs, Wire{WireFormat::fp32, 1.0}).wait());
      waited[r] = t.now_s();
      CHECK(xs[0][0].item<float>() == doctest::Approx(1.5f));
      if (++done == k) sides.close();
    });
  }
  sim.engine.run();
  CHECK(done == k);
  CHECK(side_actors == 0);
  const double expected = 2.0 * (k - 1) / k * bytes / (mbps * 1e6 / 8) + 2 * (k - 1) * 0.010;  // 5 ms each way
  for (int r = 0; r < k; ++r) CHECK(waited[r] == doctest::Approx(expected).epsilon(0.01));
  CHECK(bytes_of(recorder, EventKind::send, 0) == doctest::Approx(2.0 * (k - 1) / k * bytes).epsilon(1e-6));
}
