// Collectives over subgroups and pairwise exchanges through SimTransport: each group priced on the
// routes between its own hosts (the closed forms of sim/collectives.hpp with K the group's size),
// means and gathers over its members only, and a lost member failing its own group's collective only.
// SimGrid allows one Engine per process: each TEST_CASE creates at most one.
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <functional>

#include "algorithms/noloco.hpp"
#include "sim/collectives.hpp"
#include "sim/sim_test_util.hpp"
#include "sim/sim_transport.hpp"
#include "tests/doctest_torch.hpp"

namespace sg4 = simgrid::s4u;
using namespace locosim;

namespace {

const double kLanBps = 10e9, kWanBps = 100e6;
const double kLanLatencyS = 2 * 5e-6;               // lan up + lan down
const double kWanLatencyS = 5e-6 + 0.020 + 5e-6;    // lan up + wan + lan down
int site_of(int rank) { return rank < 2 ? 0 : 1; }

struct Outcome {
  std::vector<torch::Tensor> value;  // per rank: its mean (or what it gathered from its peer)
  std::vector<double> ended_s;
  std::vector<bool> completed;
  double wan_bytes = 0, lan_bytes = 0;  // sent
};

// Every rank runs body(transport, rank) in its own actor on its own host; returns what each kept.
Outcome run(TestSim& sim, SimWorld& world, Recorder& recorder,
            const std::function<bool(SimTransport&, int, torch::Tensor&)>& body) {
  const int k = static_cast<int>(sim.platform.hosts.size());
  world.hosts = sim.platform.hosts;
  world.recorder = &recorder;
  Outcome o;
  o.value.resize(k);
  o.ended_s.assign(k, -1);
  o.completed.assign(k, false);
  for (int r = 0; r < k; ++r) {
    sg4::Actor::create("w" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      SimTransport t(world, r);
      o.completed[r] = body(t, r, o.value[r]);
      o.ended_s[r] = t.now_s();
    });
  }
  sim.engine.run();
  for (const auto& e : recorder.events()) {
    if (e.kind != EventKind::send) continue;
    (site_of(e.worker) == site_of(e.peer) ? o.lan_bytes : o.wan_bytes) += e.bytes;
  }
  return o;
}

// Rank r contributes r + 1 (S bytes in fp32) to an all-reduce among `group_of(r)`.
std::function<bool(SimTransport&, int, torch::Tensor&)> reduce_among(const std::function<std::vector<int>(int)>& group_of,
                                                                     double bytes) {
  return [=](SimTransport& t, int r, torch::Tensor& kept) {
    std::vector<torch::Tensor> xs = {torch::full({static_cast<int64_t>(bytes / 4)}, static_cast<float>(r + 1))};
    const bool done = t.all_reduce_mean_among(group_of(r), xs, Wire{WireFormat::fp32, 1.0}).wait();
    kept = xs[0];
    return done;
  };
}

}  // namespace

TEST_CASE("subgroups: pairs inside each site all-reduce at once in a 2-ring's time on their LAN, and nothing crosses the WAN") {
  TestSim sim(platform_from_yaml(kTwoSites));
  SimWorld world;
  Recorder recorder;
  const double bytes = 40e6;
  const Outcome o = run(sim, world, recorder, reduce_among([](int r) {
    return r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
  }, bytes));
  // A ring of K = 2: 2(K−1)/K · S/B + 2(K−1)·λ on the route between the pair's hosts.
  const double expected = bytes * 8 / kLanBps + 2 * kLanLatencyS;
  for (int r = 0; r < 4; ++r) {
    CHECK(o.completed[r]);
    CHECK(o.ended_s[r] == doctest::Approx(expected).epsilon(0.001));
    CHECK(o.value[r][0].item<float>() == (r < 2 ? 1.5f : 3.5f));  // each pair's own mean
  }
  CHECK(o.wan_bytes == 0);
  CHECK(o.lan_bytes == doctest::Approx(4 * bytes));  // each rank sends 2(K−1)/K · S = S
}

TEST_CASE("subgroups: pairs across the sites share the WAN: each of the 2 rounds moves S/2 at half the WAN's bandwidth") {
  TestSim sim(platform_from_yaml(kTwoSites));
  SimWorld world;
  Recorder recorder;
  const double bytes = 4e6;
  const Outcome o = run(sim, world, recorder, reduce_among([](int r) {
    return r % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3};
  }, bytes));
  // Two flows each way on the WAN at once: a round's chunk S/2 at B/2, two rounds, two WAN latencies.
  const double expected = 2 * (bytes / 2 * 8 / (kWanBps / 2)) + 2 * kWanLatencyS;
  for (int r = 0; r < 4; ++r) {
    CHECK(o.ended_s[r] == doctest::Approx(expected).epsilon(0.001));
    CHECK(o.value[r][0].item<float>() == (r % 2 == 0 ? 2.0f : 3.0f));
  }
  CHECK(o.wan_bytes == doctest::Approx(4 * bytes));
  CHECK(o.lan_bytes == 0);
}

TEST_CASE("subgroups: a pairwise exchange hands each rank its peer's payload in a mesh all-gather's time, S each way") {
  TestSim sim(platform_from_yaml(kTwoSites));
  SimWorld world;
  Recorder recorder;
  const double bytes = 1e6;
  std::vector<std::vector<std::vector<torch::Tensor>>> outs(4);
  const Outcome o = run(sim, world, recorder, [&](SimTransport& t, int r, torch::Tensor& kept) {
    const int peer = 3 - r;  // 0↔3 and 1↔2: both pairs across the WAN
    const bool done = t.exchange(peer, {torch::full({3}, static_cast<float>(r))}, bytes, outs[r]).wait();
    kept = outs[r][peer][0];
    return done;
  });
  const double expected = bytes * 8 / (kWanBps / 2) + kWanLatencyS;  // two flows each way share the WAN
  for (int r = 0; r < 4; ++r) {
    CHECK(o.completed[r]);
    CHECK(o.ended_s[r] == doctest::Approx(expected).epsilon(0.001));
    CHECK(o.value[r][0].item<float>() == static_cast<float>(3 - r));
    REQUIRE(outs[r].size() == 4);
    for (int s = 0; s < 4; ++s) CHECK(outs[r][s].empty() == (s != r && s != 3 - r));  // only the pair's entries
  }
  CHECK(o.wan_bytes == doctest::Approx(4 * bytes));
}

TEST_CASE("subgroups: whole-group and subgroup calls interleave, a group of one completes alone, and the sequence continues") {
  TestSim sim(platform_from_yaml(kTwoSites));
  SimWorld world;
  Recorder recorder;
  const Outcome o = run(sim, world, recorder, [&](SimTransport& t, int r, torch::Tensor& kept) {
    const Wire wire{WireFormat::fp32, 1.0};
    std::vector<torch::Tensor> all = {torch::full({2}, static_cast<float>(r))};
    bool done = t.all_reduce_mean(all, wire).wait();                          // 1.5 everywhere
    std::vector<torch::Tensor> sub = {all[0] + static_cast<float>(r)};      // 1.5 + r
    // Ranks 0, 1, 2 in one group; rank 3 alone.
    done = t.all_reduce_mean_among(r < 3 ? std::vector<int>{0, 1, 2} : std::vector<int>{3}, sub, wire).wait() && done;
    done = t.all_reduce_mean(sub, wire).wait() && done;  // (2.5 ·3 + 4.5) / 4 = 3
    CHECK(t.next_collective() == 2);  // the whole group's sequence: subgroups are matched by group
    kept = sub[0];
    return done;
  });
  for (int r = 0; r < 4; ++r) {
    CHECK(o.completed[r]);
    CHECK(o.value[r][0].item<float>() == 3.0f);
  }
}

TEST_CASE("subgroups: a member lost fails its own group's collective after the failure timeout, not the other group's, and the redo keeps the groups in step") {
  TestSim sim(platform_from_yaml(kTwoSites));
  SimWorld world;
  world.in_group.assign(4, true);
  world.agree_on_commit = true;
  world.failure_timeout_s = 2;
  Recorder recorder;
  const double bytes = 4e6;
  std::vector<double> failed_at_s(4, -1);
  const Outcome o = run(sim, world, recorder, [&](SimTransport& t, int r, torch::Tensor& kept) {
    std::vector<torch::Tensor> xs = {torch::full({static_cast<int64_t>(bytes / 4)}, static_cast<float>(r + 1))};
    const torch::Tensor before = xs[0].clone();
    Pending p = t.all_reduce_mean_among(r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3}, xs,
                                        Wire{WireFormat::fp32, 1.0});
    if (r == 3) {  // its host fails while the LAN flows run
      sg4::this_actor::sleep_for(1e-4);
      leave_group(world, 3);
      sg4::this_actor::exit();
    }
    const bool done = p.wait();
    if (!done) {
      CHECK(torch::equal(xs[0], before));  // a failed collective leaves the tensors untouched
      failed_at_s[r] = t.now_s();
      // Redone among the members still in the run: rank 2 alone. Its group has now made two calls, the
      // other group one: the next call among the three survivors still meets.
      CHECK(t.all_reduce_mean_among({2, 3}, xs, Wire{WireFormat::fp32, 1.0}).wait());
    }
    CHECK(t.all_reduce_mean_among({0, 1, 2}, xs, Wire{WireFormat::fp32, 1.0}).wait());
    kept = xs[0];
    return done;
  });
  CHECK(o.completed[0]);
  CHECK(o.completed[1]);
  CHECK_FALSE(o.completed[2]);
  CHECK(failed_at_s[2] == doctest::Approx(1e-4 + 2).epsilon(0.001));  // noticed after the timeout
  for (int r = 0; r < 3; ++r) CHECK(o.value[r][0].item<float>() == doctest::Approx((1.5f + 1.5f + 3.0f) / 3));
}

TEST_CASE("subgroups: a group that leaves out its caller, repeats a rank or is out of order is refused by name") {
  CHECK_THROWS_WITH_AS(check_group({1, 2}, 0, 4), doctest::Contains("it is not among them"), std::logic_error);
  CHECK_THROWS_WITH_AS(check_group({0, 0, 1}, 0, 4), doctest::Contains("rank order, without repeats"), std::logic_error);
  CHECK_THROWS_WITH_AS(check_group({2, 0}, 0, 4), doctest::Contains("rank order"), std::logic_error);
  CHECK_THROWS_WITH_AS(check_group({0, 4}, 0, 4), doctest::Contains("not in a world of 4"), std::logic_error);
  CHECK_THROWS_WITH_AS(check_group({}, 0, 4), doctest::Contains("at least its caller"), std::logic_error);
  CHECK_NOTHROW(check_group({0, 3}, 3, 4));
}

// NoLoCo's traffic on two sites of two hosts: its pairs cross the WAN only when the draw pairs hosts of
// different sites, each crossing pair sending its 2P values (S) each way. DiLoCo's ring crosses the WAN
// on 2 of its 4 edges every round, 2(K−1)/K of P values each (docs/policies-noloco.md compares them).
TEST_CASE("subgroups: NoLoCo's pairs put on the WAN exactly what its group draw predicts") {
  TestSim sim(platform_from_yaml(kTwoSites));
  SimWorld world;
  Recorder recorder;
  const int rounds = 12;
  const double p_bytes = 1e5, s_bytes = 2 * p_bytes;  // φ and Δ
  double predicted = 0;
  for (int t = 0; t < rounds; ++t) {
    for (const auto& g : noloco_groups(0, t, 4, 2)) {
      if (site_of(g[0]) != site_of(g[1])) predicted += 2 * s_bytes;  // a 2-ring: S each way
    }
  }
  const Outcome o = run(sim, world, recorder, [&](SimTransport& t, int r, torch::Tensor&) {
    bool done = true;
    for (int round = 0; round < rounds; ++round) {
      for (const auto& g : noloco_groups(0, round, 4, 2)) {
        if (!std::binary_search(g.begin(), g.end(), r)) continue;
        std::vector<torch::Tensor> xs = {torch::zeros({static_cast<int64_t>(s_bytes / 4)})};
        done = t.all_reduce_mean_among(g, xs, Wire{WireFormat::fp32, 1.0}).wait() && done;
      }
    }
    return done;
  });
  CAPTURE(predicted);
  CHECK(predicted > 0);
  CHECK(o.wan_bytes == doctest::Approx(predicted).epsilon(1e-9));
  // The ring's 12 rounds of P values would have put 2 edges × 2(K−1)/K · P on the WAN a round.
  const double ring = rounds * 2 * (2.0 * 3 / 4) * p_bytes;
  MESSAGE("WAN bytes over " << rounds << " rounds: NoLoCo pairs " << o.wan_bytes << ", DiLoCo ring " << ring);
}
