// Steps as marks on the clock (sim/step_marks.hpp) end at the times SimGrid's execs would, to the
// last bit, where SimGrid's precision ends a step early and where a mark ends another activity early;
// and SimTransport queues a timing-only worker's steps behind them. SimGrid allows one Engine per
// process: ctest runs each case in a process of its own.
#include "sim/step_marks.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include "sim/collectives_test_util.hpp"
#include "sim/side_pool.hpp"
#include "sim/sim_test_util.hpp"
#include "sim/sim_transport.hpp"
#include "tests/doctest_torch.hpp"

namespace sg4 = simgrid::s4u;
using namespace locosim;
using namespace locosim::testing;

namespace {

const double kSpeed = 50e12;  // identical_hosts: 100 TFLOPS at 50%
const double kStep = kSpeed;  // a step of 1 s

// A step of `flops` at a time, each an exec waited on: what the marks stand for.
std::vector<double> execs_one_by_one(const std::vector<double>& flops) {
  std::vector<double> ends;
  for (double f : flops) {
    execute_here(f);
    ends.push_back(sg4::Engine::get_clock());
  }
  return ends;
}

}  // namespace

TEST_CASE("step marks: end where execs end, also where SimGrid's precision ends a step early") {
  // Worker 0 runs 4 steps of 1 s as marks, worker 1 the same as execs. An exec on host 2 ends 0.4 ns
  // before their second step's end: within surf/precision (1 ns), so SimGrid ends that step then, and
  // the steps after it start 0.4 ns early.
  TestSim sim(identical_hosts(3, 100, 100, 1));
  const double close = 0.4 * simgrid::config::get_value<double>("surf/precision");
  StepMarks marks;
  const std::vector<double> flops(4, kStep);
  std::vector<double> by_marks, by_execs;
  double other_end = -1;
  sg4::Actor::create("marks", sim.platform.hosts[0], [&] { marks.run(sim.platform.hosts[0], flops, by_marks); });
  sg4::Actor::create("execs", sim.platform.hosts[1], [&] { by_execs = execs_one_by_one(flops); });
  sg4::Actor::create("other", sim.platform.hosts[2], [&] {
    execute_here(kSpeed * (2 - close));
    other_end = sg4::Engine::get_clock();
  });
  sim.engine.run();
  REQUIRE(by_marks.size() == 4);
  CHECK(by_execs == by_marks);  // bit for bit
  CHECK(by_marks[0] == 1.0);
  CHECK(by_marks[1] == other_end);
  CHECK(other_end < 2.0);
  CHECK(by_marks[3] == by_marks[1] + 1.0 + 1.0);
}

// `steps` steps of 1 s as marks beside the same as execs, and an exec on a third host that ends 0.4 ns
// before the last step's date: within surf/precision, so it ends that step then. The actor running the
// marks is resumed when its last mark is due, with no exec of its own to end it.
static void last_step_within_precision(size_t steps) {
  TestSim sim(identical_hosts(3, 100, 100, 1));
  const double close = 0.4 * simgrid::config::get_value<double>("surf/precision");
  StepMarks marks;
  const std::vector<double> flops(steps, kStep);
  std::vector<double> by_marks, by_execs;
  double other_end = -1, marks_resumed = -1;
  sg4::Actor::create("marks", sim.platform.hosts[0], [&] {
    marks.run(sim.platform.hosts[0], flops, by_marks);
    marks_resumed = sg4::Engine::get_clock();
  });
  sg4::Actor::create("execs", sim.platform.hosts[1], [&] { by_execs = execs_one_by_one(flops); });
  sg4::Actor::create("other", sim.platform.hosts[2], [&] {
    execute_here(kSpeed * (static_cast<double>(steps) - close));
    other_end = sg4::Engine::get_clock();
  });
  sim.engine.run();
  REQUIRE(by_marks.size() == steps);
  CHECK(by_execs == by_marks);  // bit for bit
  CHECK(by_marks.back() == other_end);
  CHECK(other_end < static_cast<double>(steps));
  CHECK(marks_resumed == by_marks.back());
}

TEST_CASE("step marks: the last step ends where its exec would, also within SimGrid's precision") {
  last_step_within_precision(3);
}

TEST_CASE("step marks: a lone step ends where its exec would, also within SimGrid's precision") {
  last_step_within_precision(1);
}

TEST_CASE("step marks: a worker resumed before its last step ended fails, and the clock goes on") {
  TestSim sim(identical_hosts(2, 100, 100, 1));
  StepMarks marks;
  std::vector<double> ends;
  std::string failure;
  double other_end = -1;
  sg4::ActorPtr worker = sg4::Actor::create("marks", sim.platform.hosts[0], [&] {
    try {
      marks.run(sim.platform.hosts[0], {kStep, kStep}, ends);
    } catch (const std::logic_error& e) {
      failure = e.what();
    }
  });
  sg4::Actor::create("other", sim.platform.hosts[1], [&] {
    sg4::this_actor::sleep_for(0.5);
    worker->resume();  // a bug elsewhere: nothing but the marks may resume it
    execute_here(kStep * 2);
    other_end = sg4::Engine::get_clock();
  });
  sim.engine.run();
  CHECK(failure.find("resumed at 0.5") != std::string::npos);
  CHECK(other_end == 2.5);
}

TEST_CASE("step marks: a mark is a stop of the clock, where another activity within precision ends") {
  // An exec due 0.4 ns after the marks' first step ends with it, as it would with an exec's end there.
  TestSim sim(identical_hosts(2, 100, 100, 1));
  const double close = 0.4 * simgrid::config::get_value<double>("surf/precision");
  StepMarks marks;
  std::vector<double> ends;
  double other_end = -1;
  sg4::Actor::create("marks", sim.platform.hosts[0], [&] { marks.run(sim.platform.hosts[0], {kStep, kStep, kStep}, ends); });
  sg4::Actor::create("other", sim.platform.hosts[1], [&] {
    execute_here(kSpeed * (1 + close));
    other_end = sg4::Engine::get_clock();
  });
  sim.engine.run();
  CHECK(ends == std::vector<double>{1.0, 2.0, 3.0});
  CHECK(other_end == 1.0);
}

TEST_CASE("step marks: SimTransport queues a timing-only worker's steps until it asks for anything else") {
  TestSim sim(identical_hosts(2, 8, 8, 0, kRelay));
  Recorder recorder;
  StepMarks marks;
  SidePool sides;
  SimWorld world;
  kept_sides_relay_world(world, sim.platform, recorder, sides);
  world.timing_only = true;
  world.marks = &marks;
  std::vector<std::vector<double>> heard(2);
  double clock_after_computes = -1, synced_at = -1;
  int done = 0;
  for (int r = 0; r < 2; ++r) {
    sg4::Actor::create("w" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      SimTransport t(world, r);
      t.at_now([&, r](double now) { heard[r].push_back(now); });  // nothing queued: at once
      for (int step = 0; step < 3; ++step) {
        t.compute(kStep * (r + 1), [] { FAIL("timing only: no work runs"); });
        t.at_now([&, r](double now) { heard[r].push_back(now); });
      }
      if (r == 0) clock_after_computes = sg4::Engine::get_clock();  // no time has passed yet
      std::vector<torch::Tensor> xs = {torch::empty({250000}, torch::kMeta)};
      CHECK(t.all_reduce_mean(xs, Wire{WireFormat::fp32, 1.0}).wait());
      if (r == 0) synced_at = t.now_s();
      if (++done == 2) sides.close();
    });
  }
  sim.engine.run();
  CHECK(clock_after_computes == 0);
  CHECK(heard[0] == std::vector<double>{0, 1, 2, 3});
  CHECK(heard[1] == std::vector<double>{0, 2, 4, 6});
  // The all-reduce goes on when the slower worker's steps end: 1 MB up, then down, at 1 MB/s, 1 ms each way.
  CHECK(synced_at == doctest::Approx(6 + 1 + 1 + 0.002));
  std::vector<std::pair<double, double>> computed;
  for (const auto& e : recorder.events()) {
    if (e.worker == 1 && e.kind == EventKind::compute) computed.emplace_back(e.start_s, e.end_s);
  }
  CHECK(computed == std::vector<std::pair<double, double>>{{0, 2}, {2, 4}, {4, 6}});
}
