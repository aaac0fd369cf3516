// Simulated collectives: each algorithm's closed-form time on identical hosts (sim/collectives.hpp),
// its bytes per peer, real numerics through SimTransport, overlap with compute.
// SimGrid allows one Engine per process: each TEST_CASE creates at most one (ctest runs each case in
// a process of its own; running this binary without --test-case runs them all in one and aborts).
#include "sim/collectives.hpp"

#include <simgrid/s4u.hpp>

#include <functional>

#include "config/section.hpp"
#include "sim/platform.hpp"
#include "sim/sim_transport.hpp"
#include "sim/collectives_test_util.hpp"
#include "sim/flows.hpp"
#include "sim/sim_test_util.hpp"
#include "tests/doctest_torch.hpp"

namespace sg4 = simgrid::s4u;
using namespace locosim;
using namespace locosim::testing;

namespace {

using Sim = TestSim;

// Runs side(rank) on every worker's host and, if given, serve() on the relay; returns when each
// worker's side finished.
std::vector<double> run_sides(Sim& sim, const std::function<void(int)>& side, const std::function<void()>& serve = {}) {
  const int k = static_cast<int>(sim.platform.hosts.size());
  std::vector<double> finished(k, -1);
  if (serve) sg4::Actor::create("relay", sim.platform.relay, serve);
  for (int r = 0; r < k; ++r) {
    sg4::Actor::create("r" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      side(r);
      finished[r] = sg4::Engine::get_clock();
    });
  }
  sim.engine.run();
  return finished;
}

}  // namespace

TEST_CASE("collectives: a ring all-reduce of S bytes over K identical hosts takes 2(K-1)/K·S/B + 2(K-1)·latency") {
  const int k = 4;
  const double bytes = 100e6, mbps = 100, one_way_latency_s = 2 * 5e-3;  // uplink + downlink latency
  Sim sim(identical_hosts(k, mbps, mbps, 5));
  Recorder recorder;
  auto finished = run_sides(sim, [&](int r) { ring_all_reduce_flows(r, all_ranks(k), "t", bytes, recorder); });
  const double expected = 2.0 * (k - 1) / k * bytes * 8 / (mbps * 1e6) + 2 * (k - 1) * one_way_latency_s;
  for (double t : finished) CHECK(t == doctest::Approx(expected).epsilon(0.01));
  // Every rank sent 2(K-1)/K · S bytes, all to its right neighbour.
  CHECK(bytes_of(recorder, EventKind::send, 0) == doctest::Approx(2.0 * (k - 1) / k * bytes).epsilon(1e-6));
  CHECK(bytes_of(recorder, EventKind::send, 0, 1) == bytes_of(recorder, EventKind::send, 0));
}

TEST_CASE("collectives: a relay all-reduce takes S/up + S/down plus the latencies to and from the relay") {
  const int k = 4;
  const double bytes = 1e6;
  Sim sim(identical_hosts(k, 10, 100, 10, kRelay));
  Recorder recorder;
  auto finished = run_sides(
      sim, [&](int r) { relay_all_reduce_flows(r, all_ranks(k), k, "t", bytes, recorder); },
      [&] { relay_all_reduce_serve(all_ranks(k), k, "t", bytes, recorder); });
  // The relay sends the mean only once all K uploads are in: on identical hosts they arrive together.
  const double latency_s = kWorkerLatencyS + kRelayLatencyS;
  const double expected = bytes * 8 / kUpBps + latency_s + bytes * 8 / kDownBps + latency_s;  // 0.902 s
  for (double t : finished) CHECK(t == doctest::Approx(expected).epsilon(0.01));
  for (int r = 0; r < k; ++r) {
    CHECK(bytes_of(recorder, EventKind::send, r, k) == doctest::Approx(bytes));  // the relay is peer K
    CHECK(bytes_of(recorder, EventKind::recv, r, k) == doctest::Approx(bytes));
  }
  // The relay records as worker K: K uploads in, K means out.
  CHECK(bytes_of(recorder, EventKind::recv, k) == doctest::Approx(k * bytes));
  CHECK(bytes_of(recorder, EventKind::send, k) == doctest::Approx(k * bytes));
}

TEST_CASE("collectives: a relay all-reduce served in lanes sends the mean only once the slowest upload is in, to every lane's members") {
  // Four hosts on 10 Mbps up and one on 1 Mbps, all on 100 Mbps down; the relay in 2 lanes (members
  // 0, 2, 4 and 1, 3). Lane 1's uploads are in after 0.8 s, the slow host's (lane 0) after 8 s: both
  // lanes start their downloads then.
  const int k = 5;
  const double bytes = 1e6;
  const std::string yaml = "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\nhosts:\n"
                           "  - {name: h, accelerator: gpu, count: 4, uplink: " + link(10, 10) + ", downlink: " + link(100, 10) + "}\n"
                           "  - {name: slow, accelerator: gpu, count: 1, uplink: " + link(1, 10) + ", downlink: " + link(100, 10) + "}\n" +
                           kRelay;
  Section section = Section::load_string(yaml, "uneven.yaml");
  Sim sim(parse_platform(section));
  Recorder recorder;
  auto finished = run_sides(
      sim, [&](int r) { relay_all_reduce_flows(r, all_ranks(k), k, "t", bytes, recorder); },
      [&] { relay_all_reduce_serve(all_ranks(k), k, "t", bytes, recorder, 2); });
  const double latency_s = kWorkerLatencyS + kRelayLatencyS;
  const double all_in_s = bytes * 8 / 1e6 + latency_s;                   // the slow upload: 8.011 s
  const double expected = all_in_s + bytes * 8 / kDownBps + latency_s;  // 8.102 s
  for (double t : finished) CHECK(t == doctest::Approx(expected).epsilon(0.001));
  int sends = 0;
  for (const auto& e : recorder.events()) {
    if (e.worker != k || e.kind != EventKind::send) continue;
    ++sends;
    CHECK(e.start_s == doctest::Approx(all_in_s).epsilon(0.001));  // every lane waited for the slowest
  }
  CHECK(sends == k);
  CHECK(bytes_of(recorder, EventKind::recv, k) == doctest::Approx(k * bytes));
  CHECK(bytes_of(recorder, EventKind::send, k) == doctest::Approx(k * bytes));
}

TEST_CASE("collectives: known mailboxes keep each tag's mailboxes by the other end, past a few and across tags") {
  // Stand-ins for mailboxes (never dereferenced): each (tag, self, peer, direction) its own.
  std::vector<char> boxes(1000);
  const auto fake = [&](int tag, int self, int peer, bool sends) {
    return reinterpret_cast<sg4::Mailbox*>(&boxes[static_cast<size_t>(((tag * 3 + self) * 50 + peer) * 2 + sends)]);
  };
  KnownMailboxes known;
  const std::string tags[] = {"slot-0/up", "slot-0/down", "slot-1/up"};
  // A relay's way (self 40, many peers, both directions), a member's (self 3, one peer), interleaved.
  for (int round = 0; round < 2; ++round) {
    for (int peer = 0; peer < 40; ++peer) {
      for (int t = 0; t < 2; ++t) {
        for (bool sends : {false, true}) {
          sg4::Mailbox*& at = known.at(tags[t], 40, peer, sends);
          if (round == 0) {
            CHECK(at == nullptr);
            at = fake(t, 0, peer, sends);
          } else {
            CHECK(at == fake(t, 0, peer, sends));
          }
        }
      }
      sg4::Mailbox*& member = known.at(tags[2], 3, 40, true);
      if (round == 0 && peer == 0) member = fake(2, 1, 40, true);
      CHECK(member == fake(2, 1, 40, true));
    }
  }
  // Another rank under a tag already known for rank 40: its own mailbox.
  sg4::Mailbox*& other = known.at(tags[0], 7, 40, true);
  CHECK(other == nullptr);
  other = fake(0, 2, 40, true);
  CHECK(known.at(tags[0], 7, 40, true) == fake(0, 2, 40, true));
  CHECK(known.at(tags[0], 40, 7, false) == fake(0, 0, 7, false));
}

TEST_CASE("collectives: a relay all-reduce in lanes of many members, twice on one tag, takes the closed form each time") {
  // 40 members in 6 lanes of 6 or 7: each lane looks up more mailboxes than it keeps in order, while
  // the others look up theirs (each lookup of a new mailbox is a simcall); the second all-reduce finds
  // them all known.
  const int k = 40;
  const double bytes = 1e6;
  Sim sim(identical_hosts(k, 10, 100, 10, kRelay));
  Recorder recorder;
  std::vector<double> first(k, -1);
  auto finished = run_sides(
      sim,
      [&](int r) {
        relay_all_reduce_flows(r, all_ranks(k), k, "t", bytes, recorder);
        first[static_cast<size_t>(r)] = sg4::Engine::get_clock();
        relay_all_reduce_flows(r, all_ranks(k), k, "t", bytes, recorder);
      },
      [&] {
        relay_all_reduce_serve(all_ranks(k), k, "t", bytes, recorder, 6);
        relay_all_reduce_serve(all_ranks(k), k, "t", bytes, recorder, 6);
      });
  // K uploads share the relay's downlink and K downloads its uplink, far faster than the hosts' links.
  const double latency_s = kWorkerLatencyS + kRelayLatencyS;
  const double once = bytes * 8 / kUpBps + latency_s + bytes * 8 / kDownBps + latency_s;
  for (int r = 0; r < k; ++r) {
    CHECK(first[static_cast<size_t>(r)] == doctest::Approx(once).epsilon(0.01));
    CHECK(finished[static_cast<size_t>(r)] == doctest::Approx(2 * once).epsilon(0.01));
    CHECK(bytes_of(recorder, EventKind::send, r, k) == doctest::Approx(2 * bytes));
    CHECK(bytes_of(recorder, EventKind::recv, r, k) == doctest::Approx(2 * bytes));
  }
  CHECK(bytes_of(recorder, EventKind::recv, k) == doctest::Approx(2 * k * bytes));
  CHECK(bytes_of(recorder, EventKind::send, k) == doctest::Approx(2 * k * bytes));
}

TEST_CASE("collectives: a relayed all-gather on 10 Mbps up / 100 Mbps down hosts takes the closed-form upload and download times") {
  const int k = 4;
  const double bytes = 1e6;
  Sim sim(identical_hosts(k, 10, 100, 10, kRelay));
  Recorder recorder;
  auto finished = run_sides(
      sim, [&](int r) { relay_all_gather_flows(r, all_ranks(k), k, "t", bytes, recorder); },
      [&] { relay_all_gather_serve(all_ranks(k), k, "t", bytes, recorder); });
  // Upload: S over the worker's 10 Mbps uplink, then the other K-1 payloads share its 100 Mbps downlink.
  const double latency_s = kWorkerLatencyS + kRelayLatencyS;
  const double upload_s = bytes * 8 / kUpBps + latency_s;                            // 0.811 s
  const double expected = upload_s + (k - 1) * bytes * 8 / kDownBps + latency_s;     // 1.062 s
  for (double t : finished) CHECK(t == doctest::Approx(expected).epsilon(0.01));
  for (const auto& e : recorder.events()) {
    if (e.kind == EventKind::send && e.worker < k) CHECK(e.end_s == doctest::Approx(upload_s).epsilon(0.01));
  }
  for (int r = 0; r < k; ++r) {
    CHECK(bytes_of(recorder, EventKind::send, r) == doctest::Approx(bytes));  // uploads once
    CHECK(bytes_of(recorder, EventKind::recv, r, k) == doctest::Approx((k - 1) * bytes));
  }
  CHECK(bytes_of(recorder, EventKind::send, k) == doctest::Approx(k * (k - 1) * bytes));
}

TEST_CASE("collectives: the relay forwards each all-gather payload as soon as it has arrived whole") {
  // Worker 3 uploads at 5 Mbps, the others at 10 Mbps. The relay forwards the fast payloads at 0.811 s
  // without waiting for the slow one (1.611 s), which it then forwards alone.
  const int k = 4;
  const double bytes = 1e6;
  Sim sim(platform_from_yaml("accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\nhosts:\n"
                "  - {name: h, accelerator: gpu, count: 3, uplink: " + link(10, 10) + ", downlink: " + link(100, 10) +
                "}\n  - {name: slow, accelerator: gpu, uplink: " + link(5, 10) + ", downlink: " + link(100, 10) + "}\n" +
                kRelay));
  Recorder recorder;
  auto finished = run_sides(
      sim, [&](int r) { relay_all_gather_flows(r, all_ranks(k), k, "t", bytes, recorder); },
      [&] { relay_all_gather_serve(all_ranks(k), k, "t", bytes, recorder); });
  const double latency_s = kWorkerLatencyS + kRelayLatencyS;
  const double slow_arrives_s = bytes * 8 / 5e6 + latency_s;                         // 1.611 s
  const double fast_expected = slow_arrives_s + bytes * 8 / kDownBps + latency_s;   // 1.702 s (1.862 if it waited)
  for (int r = 0; r < 3; ++r) CHECK(finished[r] == doctest::Approx(fast_expected).epsilon(0.01));
  // The slow worker got the three fast payloads long before its own upload ended.
  CHECK(finished[3] == doctest::Approx(slow_arrives_s).epsilon(0.01));
}

TEST_CASE("collectives: a hierarchical all-reduce on 2 sites of 2 hosts sends only the leaders' ring over the WAN") {
  const double bytes = 10e6, lan_bps = 10e9, wan_bps = 100e6;
  Sim sim(platform_from_yaml(kTwoSites));
  const std::vector<std::vector<int>> sites = {{0, 1}, {2, 3}};
  Recorder recorder;
  auto finished = run_sides(sim, [&](int r) { hierarchical_all_reduce_flows(r, sites, "t", bytes, recorder); });
  const double lan_latency_s = 2 * 5e-6;                // lan up + lan down
  const double wan_latency_s = 5e-6 + 0.020 + 5e-6;     // lan up + wan + lan down
  const double gather_s = bytes * 8 / lan_bps + lan_latency_s;
  const double ring_s = 2.0 * (2 - 1) / 2 * bytes * 8 / wan_bps + 2 * (2 - 1) * wan_latency_s;
  const double expected = gather_s + ring_s + gather_s;  // the broadcast mirrors the gather: 0.856 s
  for (double t : finished) CHECK(t == doctest::Approx(expected).epsilon(0.01));

  auto site_of = [](int rank) { return rank < 2 ? 0 : 1; };
  double wan_bytes = 0, lan_bytes = 0;
  for (const auto& e : recorder.events()) {
    if (e.kind != EventKind::send) continue;
    if (site_of(e.worker) != site_of(e.peer)) {
      CHECK((e.worker == 0 || e.worker == 2));  // leaders only
      wan_bytes += e.bytes;
    } else {
      lan_bytes += e.bytes;
    }
  }
  CHECK(wan_bytes == doctest::Approx(2 * bytes));  // 2 leaders × 2(L-1)/L·S (a 4-host ring: 3·S)
  CHECK(lan_bytes == doctest::Approx(4 * bytes));  // 2 members up, 2 results down
}

TEST_CASE("collectives: hierarchical gathers m-1 payloads at the leader, and a siteless host is a site of one") {
  // Ranks 0-2 on site eu (10 Gbps, 5 us LAN; 100 Mbps, 20 ms access links), rank 3 with its own 100 Mbps, 10 ms links.
  const double bytes = 10e6, lan_bps = 10e9, wan_bps = 100e6;
  const PlatformSpec spec = platform_from_yaml(
      "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
      "sites:\n"
      "  eu: {lan: {bandwidth: 10 Gbps, latency: 5 us}, uplink: {bandwidth: 100 Mbps, latency: 20 ms},\n"
      "       downlink: {bandwidth: 100 Mbps, latency: 20 ms}}\n"
      "hosts:\n"
      "  - {name: e, site: eu, accelerator: gpu, count: 3}\n"
      "  - {name: x, accelerator: gpu, uplink: " + link(100, 10) + ", downlink: " + link(100, 10) + "}\n");
  Sim sim(spec);
  const std::vector<std::vector<int>> sites = site_groups(spec);
  REQUIRE(sites == std::vector<std::vector<int>>{{0, 1, 2}, {3}});
  Recorder recorder;
  auto finished = run_sides(sim, [&](int r) { hierarchical_all_reduce_flows(r, sites, "t", bytes, recorder); });
  const double lan_s = 2 * bytes * 8 / lan_bps + 2 * 5e-6;            // 2 members share the leader's LAN link
  const double wan_latency_s = 5e-6 + 0.020 + 0.010;                  // lan + site access + x's own link
  const double ring_s = bytes * 8 / wan_bps + 2 * wan_latency_s;      // 2 leaders: 2 rounds of S/2
  CHECK(finished[3] == doctest::Approx(lan_s + ring_s).epsilon(0.01));  // x has nobody to broadcast to
  for (int r = 0; r < 3; ++r) CHECK(finished[r] == doctest::Approx(lan_s + ring_s + lan_s).epsilon(0.01));
}

TEST_CASE("collectives: a mesh all-gather takes (K-1)·S/B + latency") {
  const int k = 4;
  const double bytes = 1e6, mbps = 100, latency_s = 2 * 5e-3;
  Sim sim(identical_hosts(k, mbps, mbps, 5));
  Recorder recorder;
  auto finished = run_sides(sim, [&](int r) { mesh_all_gather_flows(r, all_ranks(k), "t", bytes, recorder); });
  const double expected = (k - 1) * bytes * 8 / (mbps * 1e6) + latency_s;  // 0.25 s
  for (double t : finished) CHECK(t == doctest::Approx(expected).epsilon(0.01));
  CHECK(bytes_of(recorder, EventKind::send, 0) == doctest::Approx((k - 1) * bytes));
  CHECK(bytes_of(recorder, EventKind::send, 0, 3) == doctest::Approx(bytes));
}

TEST_CASE("collectives: a ring all-gather takes (K-1)·(S/B + latency)") {
  const int k = 4;
  const double bytes = 1e6, mbps = 100, latency_s = 2 * 5e-3;
  Sim sim(identical_hosts(k, mbps, mbps, 5));
  Recorder recorder;
  auto finished = run_sides(sim, [&](int r) { ring_all_gather_flows(r, all_ranks(k), "t", bytes, recorder); });
  const double expected = (k - 1) * (bytes * 8 / (mbps * 1e6) + latency_s);  // 0.27 s
  for (double t : finished) CHECK(t == doctest::Approx(expected).epsilon(0.01));
  CHECK(bytes_of(recorder, EventKind::send, 0, 1) == doctest::Approx((k - 1) * bytes));  // all to the right
  CHECK(bytes_of(recorder, EventKind::recv, 0, 3) == doctest::Approx((k - 1) * bytes));
}

TEST_CASE("collectives: SimTransport averages for real and overlaps the collective with compute") {
  const int k = 3;
  Sim sim(identical_hosts(k, 8, 8, 0));  // 8 Mbps = 1 MB/s
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
      CHECK(p.wait());
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

TEST_CASE("collectives: SimTransport dispatches on the choice, and the numbers do not change with it") {
  const int k = 4;
  Sim sim(platform_from_yaml(kTwoSites));
  Recorder recorder;
  SimWorld world;
  world.hosts = sim.platform.hosts;
  world.recorder = &recorder;
  world.relay = sim.platform.relay;
  world.sites = {{0, 1}, {2, 3}};
  const std::vector<AllReduceAlgorithm> reduces = {AllReduceAlgorithm::ring, AllReduceAlgorithm::relay,
                                                   AllReduceAlgorithm::hierarchical};
  const std::vector<AllGatherAlgorithm> gathers = {AllGatherAlgorithm::mesh, AllGatherAlgorithm::ring,
                                                   AllGatherAlgorithm::relay};
  const double gather_bytes = 3000;
  std::vector<std::vector<torch::Tensor>> means(k);                  // [rank][algorithm]
  std::vector<std::vector<std::vector<torch::Tensor>>> gathered(k);  // [rank][algorithm] → out[0][0]
  for (int r = 0; r < k; ++r) {
    sg4::Actor::create("w" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      SimTransport t(world, r);
      torch::manual_seed(static_cast<uint64_t>(r));
      const torch::Tensor mine = torch::randn({1000});
      for (AllReduceAlgorithm a : reduces) {
        // Every rank writes the same choice before its call: no rank can be past this collective yet.
        world.collectives.all_reduce = a;
        std::vector<torch::Tensor> xs = {mine.clone()};
        CHECK(t.all_reduce_mean(xs, Wire{WireFormat::fp32, 1.0}).wait());
        means[r].push_back(xs[0]);
      }
      for (AllGatherAlgorithm a : gathers) {
        world.collectives.all_gather = a;
        std::vector<std::vector<torch::Tensor>> out;
        CHECK(t.all_gather({mine}, gather_bytes, out).wait());
        gathered[r].push_back({out[0][0], out[3][0]});
      }
    });
  }
  sim.engine.run();
  const torch::Tensor& reference = means[0][0];
  for (int r = 0; r < k; ++r) {
    for (size_t a = 0; a < reduces.size(); ++a) CHECK(torch::equal(means[r][a], reference));
    for (size_t a = 0; a < gathers.size(); ++a) {
      CHECK(torch::equal(gathered[r][a][0], gathered[0][0][0]));
      CHECK(torch::equal(gathered[r][a][1], gathered[0][0][1]));
    }
  }
  // The flows did change: the relay (worker K) saw one relay all-reduce (K in, K out of 4000 bytes)
  // and one relay all-gather (K in, K(K-1) out of 3000 bytes); in the hierarchical all-reduce rank 1
  // sent its whole 4000 bytes to its leader, rank 0 (a ring would send 1000-byte chunks to rank 2).
  CHECK(bytes_of(recorder, EventKind::recv, k) == doctest::Approx(k * 4000.0 + k * gather_bytes));
  CHECK(bytes_of(recorder, EventKind::send, k) == doctest::Approx(k * 4000.0 + k * (k - 1) * gather_bytes));
  CHECK(bytes_of(recorder, EventKind::send, 1, 0) == doctest::Approx(4000.0 + gather_bytes));  // + the mesh's
  // Rank 1 sent to rank 2: 2(K-1) ring chunks of 1000 bytes, one mesh payload, K-1 ring all-gather payloads.
  CHECK(bytes_of(recorder, EventKind::send, 1, 2) == doctest::Approx(6 * 1000.0 + gather_bytes + 3 * gather_bytes));
}

TEST_CASE("collectives: a worker left waiting on a collective nobody else joins says so when the engine stops") {
  // Regression: a run whose workers never finished (SimGrid: "Deadlock detected") was reported as
  // a success with 0 steps. The engine returns; simulate_policy then names each unfinished worker
  // and its activity(), and fails the run.
  Sim sim(identical_hosts(2, 8, 8, 1));
  Recorder recorder;
  SimWorld world;
  world.hosts = sim.platform.hosts;
  world.recorder = &recorder;
  std::vector<std::unique_ptr<SimTransport>> transports;
  for (int r = 0; r < 2; ++r) transports.push_back(std::make_unique<SimTransport>(world, r));
  bool returned = false;
  sg4::Actor::create("w0", sim.platform.hosts[0], [&] {
    std::vector<torch::Tensor> xs = {torch::ones({1000})};
    (void)transports[0]->all_reduce_mean(xs, Wire{WireFormat::fp32, 1.0}).wait();  // rank 1 never joins
    returned = true;
  });
  sg4::Actor::create("w1", sim.platform.hosts[1], [&] { transports[1]->compute(1e12, [] {}); });
  sim.engine.run();
  CHECK_FALSE(returned);
  CHECK(transports[0]->activity().rfind("waiting since 0 s for collective 0 (all_reduce of 4000 bytes per rank)", 0) == 0);
  CHECK(transports[1]->activity().empty());
}

// Aggregated flows (network: {flows: aggregated}): on K identical workers each takes its algorithm's
// closed form, and puts the exact algorithm's bytes on each rank's links.
TEST_CASE("collectives: aggregated ring all-reduce and ring all-gather take the exact rings' closed forms and bytes") {
  const int k = 8;
  const double bytes = 10e6, mbps = 100, one_way_latency_s = 2 * 5e-3;
  Sim sim(identical_hosts(k, mbps, mbps, 5));
  Recorder recorder;
  std::vector<double> reduced(k), gathered(k);
  auto finished = run_sides(sim, [&](int r) {
    ring_all_reduce_aggregated(r, all_ranks(k), sim.platform.hosts, "reduce", bytes, recorder);
    reduced[r] = sg4::Engine::get_clock();
    ring_all_gather_aggregated(r, all_ranks(k), sim.platform.hosts, "gather", bytes, recorder);
  });
  const double reduce_s = 2.0 * (k - 1) / k * bytes * 8 / (mbps * 1e6) + 2 * (k - 1) * one_way_latency_s;
  const double gather_s = (k - 1) * (bytes * 8 / (mbps * 1e6) + one_way_latency_s);
  for (int r = 0; r < k; ++r) {
    CHECK(reduced[r] == doctest::Approx(reduce_s).epsilon(1e-3));
    CHECK(finished[r] - reduced[r] == doctest::Approx(gather_s).epsilon(1e-3));
    // One flow each way per collective, with all the ring's bytes, to the right neighbour.
    CHECK(bytes_of(recorder, EventKind::send, r, (r + 1) % k) ==
          doctest::Approx(2.0 * (k - 1) / k * bytes + (k - 1) * bytes).epsilon(1e-6));
    CHECK(bytes_of(recorder, EventKind::recv, r, (r + k - 1) % k) == bytes_of(recorder, EventKind::send, r));
  }
  CHECK(recorder.events().size() == static_cast<size_t>(2 * 2 * k));  // a send and a recv per rank, twice
}

TEST_CASE("collectives: an aggregated mesh all-gather moves the mesh's bytes in the mesh's time") {
  const int k = 8;
  const double bytes = 1e6, mbps = 100, latency_s = 2 * 5e-3;
  Sim sim(identical_hosts(k, mbps, mbps, 5));
  Recorder recorder;
  auto finished = run_sides(
      sim, [&](int r) { mesh_all_gather_aggregated(r, all_ranks(k), sim.platform.hosts, "t", bytes, recorder); });
  const double expected = (k - 1) * bytes * 8 / (mbps * 1e6) + latency_s;
  for (double t : finished) CHECK(t == doctest::Approx(expected).epsilon(1e-3));
  CHECK(bytes_of(recorder, EventKind::send, 0) == doctest::Approx((k - 1) * bytes));
  CHECK(bytes_of(recorder, EventKind::recv, 0) == doctest::Approx((k - 1) * bytes));
}

TEST_CASE("collectives: an aggregated relay all-gather takes S/up + (K-1)·S/down and one flow per worker each way") {
  const int k = 8;
  const double bytes = 1e6;
  Sim sim(identical_hosts(k, 10, 100, 10, kRelay));
  Recorder recorder;
  auto finished = run_sides(
      sim, [&](int r) { relay_all_gather_aggregated(r, all_ranks(k), k, "t", bytes, recorder); },
      [&] { relay_all_gather_aggregated_serve(all_ranks(k), k, "t", bytes, recorder); });
  const double latency_s = kWorkerLatencyS + kRelayLatencyS;
  const double expected = bytes * 8 / kUpBps + latency_s + (k - 1) * bytes * 8 / kDownBps + latency_s;
  for (double t : finished) CHECK(t == doctest::Approx(expected).epsilon(1e-3));
  for (int r = 0; r < k; ++r) {
    CHECK(bytes_of(recorder, EventKind::send, r, k) == doctest::Approx(bytes));
    CHECK(bytes_of(recorder, EventKind::recv, r, k) == doctest::Approx((k - 1) * bytes));
  }
  CHECK(bytes_of(recorder, EventKind::send, k) == doctest::Approx(k * (k - 1) * bytes));
  CHECK(recorder.events().size() == static_cast<size_t>(4 * k));  // K uploads and K downloads, each seen twice
}

TEST_CASE("collectives: with uploads 10x apart, the aggregated relay all-gather ends when the exact one does") {
  // Two workers on 100 Mbps uplinks, two on 10 Mbps: the exact relay forwards the fast payloads while
  // the slow ones are still coming up; the aggregated one must not wait for the slow ones to start.
  const std::string home = "accelerator: gpu, count: 2, downlink: " + link(100, 10) + ", uplink: ";
  Sim sim(platform_from_yaml("accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\nhosts:\n"
                "  - {name: fast, " + home + link(100, 10) + "}\n"
                "  - {name: slow, " + home + link(10, 10) + "}\n" + kRelay));
  const int k = 4;
  const double bytes = 1e6;
  Recorder recorder;
  sg4::BarrierPtr between = sg4::Barrier::create(k + 1);
  std::vector<double> exact_s(k), aggregated_s(k);
  sg4::Actor::create("relay", sim.platform.relay, [&] {
    relay_all_gather_serve(all_ranks(k), k, "exact", bytes, recorder);
    between->wait();
    relay_all_gather_aggregated_serve(all_ranks(k), k, "aggregated", bytes, recorder);
  });
  for (int r = 0; r < k; ++r) {
    sg4::Actor::create("r" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      relay_all_gather_flows(r, all_ranks(k), k, "exact", bytes, recorder);
      exact_s[r] = sg4::Engine::get_clock();
      between->wait();
      const double start = sg4::Engine::get_clock();
      relay_all_gather_aggregated(r, all_ranks(k), k, "aggregated", bytes, recorder);
      aggregated_s[r] = sg4::Engine::get_clock() - start;
    });
  }
  sim.engine.run();
  // The exact collective started at 0; the slow uploads (0.8 s) end both.
  for (int r = 0; r < k; ++r) {
    CAPTURE(r);
    CHECK(exact_s[r] > 0.8);
    CHECK(aggregated_s[r] == doctest::Approx(exact_s[r]).epsilon(0.01));
  }
}
