// LinkMeter: per-link bytes per time bucket, pinned on a lone transfer worked out by hand and checked
// against the flows of concurrent collectives. One SimGrid Engine per TEST_CASE (ctest runs each case
// in a process of its own).
#include "sim/links.hpp"

#include <simgrid/s4u.hpp>

#include <map>

#include "config/section.hpp"
#include "sim/collectives.hpp"
#include "sim/platform.hpp"
#include "sim/sim_test_util.hpp"
#include "tests/doctest_torch.hpp"

namespace sg4 = simgrid::s4u;
using namespace locosim;

namespace {

PlatformSpec platform_from(const std::string& yaml) { return platform_from_yaml(yaml, "links-test.yaml"); }

using Sim = TestSim;

const LinkTraffic& traffic(const LinkReport& r, const std::string& link) {
  for (const auto& l : r.links) {
    if (l.link == link) return l;
  }
  FAIL("no link " << link);
  throw std::logic_error("unreachable");
}

double total(const LinkTraffic& l) {
  double sum = 0;
  for (double b : l.bytes) sum += b;
  return sum;
}

}  // namespace

TEST_CASE("links: a lone 10 MB transfer fills its 10 Mbps uplink bucket by bucket") {
  // a -> b: route [a.up (10 Mbps, 10 ms), b.down (100 Mbps, 10 ms)]: 20 ms of latency, then 8 s at 1.25 MB/s.
  Sim sim(platform_from(
      "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
      "hosts:\n"
      "  - {name: a, accelerator: gpu, uplink: {bandwidth: 10 Mbps, latency: 10 ms}, downlink: {bandwidth: 100 Mbps, latency: 10 ms}}\n"
      "  - {name: b, accelerator: gpu, uplink: {bandwidth: 10 Mbps, latency: 10 ms}, downlink: {bandwidth: 100 Mbps, latency: 10 ms}}\n"));
  LinkMeter meter(sim.platform.hosts);
  int token = 0;
  sg4::Actor::create("sender", sim.platform.hosts[0], [&] { sg4::Mailbox::by_name("m")->put(&token, 10'000'000); });
  sg4::Actor::create("receiver", sim.platform.hosts[1], [] { sg4::Mailbox::by_name("m")->get<int>(); });
  sim.engine.run();
  const double end_s = sg4::Engine::get_clock();
  CHECK(end_s == doctest::Approx(8.02).epsilon(1e-12));

  LinkReport r = meter.report(1.0, end_s);
  REQUIRE(r.bucket_count() == 9);  // [0,1) ... [7,8), [8, 8.02)
  CHECK(r.bucket_end_s(8) == doctest::Approx(8.02).epsilon(1e-12));
  const LinkTraffic& up = traffic(r, "a.up");
  CHECK(up.direction == "up");
  CHECK(up.worker == 0);
  CHECK(up.host == "a");
  CHECK(up.bandwidth_bps == doctest::Approx(10e6));
  CHECK(up.bytes[0] == doctest::Approx(0.98 * 1.25e6).epsilon(1e-9));
  for (int b = 1; b <= 7; ++b) CHECK(up.bytes[b] == doctest::Approx(1.25e6).epsilon(1e-9));
  CHECK(up.bytes[8] == doctest::Approx(0.02 * 1.25e6).epsilon(1e-6));
  CHECK(total(up) == doctest::Approx(10e6).epsilon(1e-9));
  const LinkTraffic& down = traffic(r, "b.down");  // the same bytes, at a tenth of its capacity
  CHECK(down.direction == "down");
  CHECK(down.worker == 1);
  CHECK(total(down) == doctest::Approx(10e6).epsilon(1e-9));
  CHECK(down.bytes[3] == doctest::Approx(1.25e6).epsilon(1e-9));
  CHECK(total(traffic(r, "a.down")) == 0);
  CHECK(total(traffic(r, "b.up")) == 0);
  // Order: each host's up then down link, by rank.
  REQUIRE(r.links.size() == 4);
  CHECK(r.links[0].link == "a.up");
  CHECK(r.links[1].link == "a.down");
  CHECK(r.links[2].link == "b.up");
  CHECK(r.links[3].link == "b.down");
}

TEST_CASE("links: every link carries exactly the bytes of the flows routed over it") {
  // Three hosts with different asymmetric links and latencies, two sites sharing access links, and a
  // ring all-reduce concurrent with a mesh all-gather: rates change at flow starts, ends and latency expiries.
  const PlatformSpec spec = platform_from(
      "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
      "sites:\n"
      "  eu: {lan: {bandwidth: 1 Gbps, latency: 50 us}, uplink: {bandwidth: 40 Mbps, latency: 8 ms},"
      " downlink: {bandwidth: 200 Mbps, latency: 8 ms}}\n"
      "hosts:\n"
      "  - {name: e, site: eu, accelerator: gpu, count: 2}\n"
      "  - {name: home, accelerator: gpu, uplink: {bandwidth: 10 Mbps, latency: 15 ms}, downlink: {bandwidth: 50 Mbps, latency: 3 ms}}\n"
      "  - {name: uni, accelerator: gpu, uplink: {bandwidth: 30 Mbps, latency: 2 ms}, downlink: {bandwidth: 300 Mbps, latency: 2 ms}}\n");
  Sim sim(spec);
  const int k = static_cast<int>(spec.hosts.size());
  LinkMeter meter(sim.platform.hosts);
  Recorder recorder;
  for (int r = 0; r < k; ++r) {
    sg4::Actor::create("ring-" + std::to_string(r), sim.platform.hosts[r],
                       [&, r] { ring_all_reduce_flows(r, all_ranks(k), "ring", 3e6, recorder); });
    sg4::Actor::create("mesh-" + std::to_string(r), sim.platform.hosts[r], [&, r] {
      sg4::this_actor::sleep_for(0.05 * r);
      mesh_all_gather_flows(r, all_ranks(k), "mesh", 1e6 * (r + 1), recorder);
    });
  }
  sim.engine.run();

  std::map<std::string, double> expected;  // link -> bytes of the sends routed over it
  for (const auto& e : recorder.events()) {
    if (e.kind != EventKind::send) continue;
    for (const auto& link : route_link_names(spec, e.worker, e.peer)) expected[link] += e.bytes;
  }
  LinkReport r = meter.report(0, sg4::Engine::get_clock());
  CHECK(r.bucket_s == doctest::Approx(auto_bucket_s(sg4::Engine::get_clock())));
  CHECK(r.bucket_count() <= 200);
  REQUIRE(r.links.size() == 2 * 4 + 2);  // each host's two own links, and the site's uplink and downlink
  for (const auto& l : r.links) {
    INFO(l.link);
    CHECK(total(l) == doctest::Approx(expected[l.link]).epsilon(1e-9));
    for (size_t b = 0; b < l.bytes.size(); ++b) {  // never above capacity
      CHECK(l.bytes[b] <= l.bandwidth_bps / 8 * (r.bucket_end_s(b) - r.bucket_start_s(b)) * (1 + 1e-9));
    }
  }
  CHECK(traffic(r, "eu.up").worker == -1);
  CHECK(traffic(r, "eu.up").direction == "up");
  CHECK(traffic(r, "eu.lan.e-1.down").worker == 1);
  CHECK(traffic(r, "eu.lan.e-1.down").host == "e-1");
  CHECK(expected["eu.up"] > 0);
}

TEST_CASE("links: automatic buckets are round and cut a run into at most 200") {
  CHECK(auto_bucket_s(8.02) == doctest::Approx(0.05));
  CHECK(auto_bucket_s(200) == doctest::Approx(1));
  CHECK(auto_bucket_s(201) == doctest::Approx(2));
  CHECK(auto_bucket_s(3600) == doctest::Approx(20));
  CHECK(auto_bucket_s(0) == 1);
  for (double end : {0.3, 7.0, 99.0, 1234.5, 86400.0}) CHECK(end / auto_bucket_s(end) <= 200 + 1e-9);
}

TEST_CASE("links: a bucket that would cut a long run into too many buckets is widened, and says so") {
  // Regression: report.link_bucket of 1 ms on a run of simulated days asked for billions of buckets.
  CHECK(bucket_width_s(0, 8.02) == doctest::Approx(auto_bucket_s(8.02)));
  CHECK(bucket_width_s(0.5, 100) == 0.5);
  CHECK(bucket_width_s(0.001, 1e6) == doctest::Approx(50));  // 1e6 s / 20000 buckets
  CHECK(1e6 / bucket_width_s(0.001, 1e6) <= kMaxLinkBuckets);
}
