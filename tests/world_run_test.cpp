// A changing world end to end (scenarios/tests/faults-small.yaml): every policy lives through a host
// lost in the middle of a collective, a host lost mid-compute and a link cut and restored; a worker
// that comes back downloads the group's state and is back in the next round; a group that every
// worker left restarts from its last handover point; asynchronous DiLoCo ends when a worker's link
// or the server's host goes off for good; a speed profile doubles compute intervals exactly; random
// churn gives the same files, byte for byte, for the same seed.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"
#include "tests/registered_policies.hpp"

using namespace locosim::testing;

namespace {

// Every registered policy, by its registry example, but asynchronous DiLoCo and the quorum syncer: their
// workers leave for good where the others redo or skip, and the survivors train the run's work in
// their place (asynchronous DiLoCo's own cases below; the quorum syncer's failed push in
// tests/quorum_syncer_events_test.cpp).
const std::set<std::string> kOwnCases = {"async_diloco", "quorum_syncer"};
const std::vector<std::string> kPolicies = registered_policy_names(kOwnCases);

struct Event {
  int worker = 0;
  std::string kind;
  double start_s = 0, end_s = 0, bytes = 0;
  int peer = -1;
};

std::vector<Event> events_of(const std::string& path) {
  std::istringstream in(read_file(path));
  std::string line;
  std::getline(in, line);  // header
  std::vector<Event> events;
  while (std::getline(in, line)) {
    Event e;
    char kind[32] = {0};
    char peer[32] = {0};
    std::sscanf(line.c_str(), "%d,%31[^,],%lf,%lf,%lf,%31s", &e.worker, kind, &e.start_s, &e.end_s, &e.bytes, peer);
    e.kind = kind;
    e.peer = peer[0] ? std::atoi(peer) : -1;
    events.push_back(e);
  }
  return events;
}

struct Metric {
  double time_s = 0;
  int worker = 0;
  int step = 0;
  std::string eval_loss;
};

std::vector<Metric> metrics_of(const std::string& path) {
  std::istringstream in(read_file(path));
  std::string line;
  std::getline(in, line);
  std::vector<Metric> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    cells.resize(7);
    rows.push_back({std::stod(cells[0]), std::stoi(cells[1]), std::stoi(cells[2]), cells[5]});
  }
  return rows;
}

std::string seconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f s", s);
  return buf;
}

// A scratch folder with corpus.txt and s.yaml: the faults scenario plus `world` (YAML, may be empty),
// its collectives' flows `flows` (exact or aggregated).
std::string faults_dir(const std::string& name, const std::string& world, const std::string& flows = "exact") {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 60000);
  std::string scenario = replaced(read_file("scenarios/tests/faults-small.yaml"), "path: kjv", "path: corpus.txt");
  scenario = with_policies(scenario, registered_policies_block(kOwnCases));
  scenario = replaced(scenario, "all_gather: ring}", "all_gather: ring, flows: " + flows + "}");
  write_file(dir + "/s.yaml", scenario + world);
  return dir;
}

std::string run_dir(const std::string& dir, const std::string& policy) { return dir + "/runs/faults-small/" + policy; }

// The static world's run of every policy: where to strike. Timing only (README "Timing-only runs"):
// the same events, times and wall-clock to the last byte as a run that trains, without the steps.
const std::string& baseline() {
  static const std::string dir = [] {
    const std::string d = faults_dir("world-baseline", "numerics: none\n");
    CliResult r = run_locosim("run s.yaml", d);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return d;
  }();
  return dir;
}

// The middle of the `nth` (0-based) compute of worker 1 in the static run.
double middle_of_compute(const std::string& policy, int nth) {
  for (const Event& e : events_of(run_dir(baseline(), policy) + "/events.csv")) {
    if (e.worker == 1 && e.kind == "compute" && nth-- == 0) return (e.start_s + e.end_s) / 2;
  }
  FAIL("worker 1 of " << policy << " has too few steps");
  return 0;
}

// The middle of worker 1's longest send in the static run: the middle of a collective. Of sends
// as long to the microsecond (DeMo's are all alike), the first: early enough that the run goes on
// past the cut.
double middle_of_longest_send(const std::string& policy) {
  Event longest;
  for (const Event& e : events_of(run_dir(baseline(), policy) + "/events.csv")) {
    if (e.worker == 1 && e.kind == "send" && e.end_s - e.start_s > longest.end_s - longest.start_s + 1e-6) longest = e;
  }
  REQUIRE(longest.end_s > longest.start_s);
  return (longest.start_s + longest.end_s) / 2;
}

// Runs `policy` alone on the faults scenario with `world`; checks it finished with a finite loss.
std::string run_with(const std::string& name, const std::string& policy, const std::string& world,
                     const std::string& flows = "exact") {
  const std::string dir = faults_dir(name + "-" + policy, world, flows);
  CliResult r = run_locosim("run s.yaml --policy " + policy, dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string json = read_file(run_dir(dir, policy) + "/summary.json");
  CHECK(std::isfinite(json_number(json, "final_eval_loss")));
  CHECK(json_number(json, "steps") == 12);
  return run_dir(dir, policy);
}

// faults_dir with asynchronous DiLoCo (H = 4) among its policies: its server is on w-0, rank 0's host
// (the platform has no relay).
std::string async_faults_dir(const std::string& name, const std::string& world) {
  const std::string dir = faults_dir(name, world);
  write_file(dir + "/s.yaml",
             replaced(read_file(dir + "/s.yaml"), "policies:\n", "policies:\n  - {name: async_diloco, inner_steps: 4}\n"));
  return dir;
}

// Runs the CLI stopped after 120 s (timeout's exit 124): a run that never ends fails the test instead
// of hanging it (env(1) runs `timeout` with the rest as its command).
CliResult run_bounded(const std::string& args, const std::string& dir) {
  return run_locosim(args, dir, "locosim", "timeout 120");
}

// Every host off in the middle of `policy`'s step 6 compute, back 5 s later: a world section, and
// when the hosts go off and come back.
struct AllAway {
  double lost_s = 0, back_s = 0;
  std::string world;
};
AllAway all_away(const std::string& policy) {
  AllAway a;
  a.lost_s = middle_of_compute(policy, 5);
  a.back_s = a.lost_s + 5;
  a.world = "world:\n  events:\n";
  for (int w = 0; w < 3; ++w) {
    a.world += "    - {host: w-" + std::to_string(w) + ", at: " + seconds(a.lost_s) + ", until: " + seconds(a.back_s) +
               ", state: off}\n";
  }
  return a;
}

// The end of the latest event of events.csv.
double last_event_end(const std::string& path) {
  double end = 0;
  for (const Event& e : events_of(path)) end = std::max(end, e.end_s);
  return end;
}

}  // namespace

TEST_CASE("world: every policy finishes with a finite loss when a host is lost in the middle of a collective") {
  for (const std::string policy : kPolicies) {
    CAPTURE(policy);
    const double at = middle_of_longest_send(policy);
    const std::string out = run_with("mid-collective", policy,
                                     "world:\n  events:\n    - {host: w-1, at: " + seconds(at) + ", state: off}\n");
    const std::string json = read_file(out + "/summary.json");
    CHECK(json_number(json, "workers_lost") == 1);
    // The loss is on record: worker 1 is away from `at` to the end, its unfinished work discarded.
    bool away = false, discarded = false;
    for (const Event& e : events_of(out + "/events.csv")) {
      away |= e.worker == 1 && e.kind == "away" && std::fabs(e.start_s - at) < 1e-6;
      discarded |= e.worker == 1 && e.kind == "discard" && std::fabs(e.end_s - at) < 1e-6;
    }
    CHECK(away);
    CHECK(discarded);
    // The survivors' collectives ran among themselves: no flow to or from worker 1 after it was lost.
    for (const Event& e : events_of(out + "/events.csv")) {
      if (e.worker != 1 && (e.kind == "send" || e.kind == "recv") && e.peer == 1) CHECK(e.start_s < at);
    }
  }
}

TEST_CASE("world: with aggregated flows, a host lost in the middle of a collective leaves the others to finish") {
  // An aggregated ring waits at a barrier for all its members: a lost member must fail it for all.
  for (const std::string policy : kPolicies) {
    CAPTURE(policy);
    const double at = middle_of_longest_send(policy);
    const std::string out = run_with("aggregated-mid-collective", policy,
                                     "world:\n  events:\n    - {host: w-1, at: " + seconds(at) + ", state: off}\n",
                                     "aggregated");
    CHECK(json_number(read_file(out + "/summary.json"), "workers_lost") == 1);
    for (const Event& e : events_of(out + "/events.csv")) {
      if (e.worker != 1 && (e.kind == "send" || e.kind == "recv") && e.peer == 1) CHECK(e.start_s < at);
    }
  }
}

TEST_CASE("world: every policy finishes with a finite loss when a host is lost mid-compute") {
  for (const std::string policy : kPolicies) {
    CAPTURE(policy);
    const double at = middle_of_compute(policy, 2);  // step 3
    const std::string out = run_with("mid-compute", policy,
                                     "world:\n  events:\n    - {host: w-1, at: " + seconds(at) + ", state: off}\n");
    CHECK(json_number(read_file(out + "/summary.json"), "workers_lost") == 1);
  }
}

TEST_CASE("world: every policy finishes with a finite loss when a link is cut under a collective and restored") {
  for (const std::string policy : kPolicies) {
    CAPTURE(policy);
    const double at = middle_of_longest_send(policy);
    const std::string out = run_with("link-cut", policy,
                                     "world:\n  events:\n    - {link: w-1.up, at: " + seconds(at) + ", until: " +
                                         seconds(at + 20) + ", state: off}\n");
    const std::string json = read_file(out + "/summary.json");
    CHECK(json_number(json, "workers_lost") == 0);
    // The failure is seen: a sync given up (CO2, Streaming DiLoCo skip an overlapped round), or the
    // members waited for the failure timeout (10 s) before redoing it or, DeMo, going on.
    const double before = json_number(read_file(run_dir(baseline(), policy) + "/summary.json"), "wall_clock_s");
    CHECK((json_number(json, "syncs_aborted") >= 1 || json_number(json, "wall_clock_s") > before + 10));
    // The cut is on record: worker 1's link_off event, and links.csv's capacity of w-1.up, which
    // carried nothing while it was off and less than its nominal 20 Mbps in the buckets it spans.
    int cuts = 0;
    for (const Event& e : events_of(out + "/events.csv")) {
      if (e.kind != "link_off") continue;
      ++cuts;
      CHECK(e.worker == 1);
      CHECK(e.start_s == doctest::Approx(at));
      CHECK(e.end_s == doctest::Approx(at + 20));
    }
    CHECK(cuts == 1);
    std::istringstream links(read_file(out + "/links.csv"));
    std::string row;
    double cut_bytes = 0, lowest_bps = 1e18;
    while (std::getline(links, row)) {
      if (row.rfind("w-1.up,", 0) != 0) continue;
      std::vector<std::string> cells;
      std::stringstream fields(row);
      for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
      const double start = std::stod(cells[4]), end = std::stod(cells[5]);
      if (start >= at && end <= at + 20) cut_bytes += std::stod(cells[6]);
      lowest_bps = std::min(lowest_bps, std::stod(cells[8]));
    }
    CHECK(cut_bytes == 0);
    CHECK(lowest_bps < 20e6);
  }
}

TEST_CASE("world: a worker that comes back downloads the group's state and is back in the next round") {
  // DiLoCo, H = 4: worker 1 is lost during step 2 and its host is back 0.1 s later. It downloads the
  // group's state (θ and the optimizer states) from worker 0, the lowest live rank, while the others
  // go on, then goes in at the first round boundary after its download, with the group's parameters.
  const double lost = middle_of_compute("diloco", 1);  // step 2
  const double back = lost + 0.1;
  const std::string out = run_with("rejoin", "diloco",
                                   "world:\n  events:\n    - {host: w-1, at: " + seconds(lost) + ", until: " +
                                       seconds(back) + ", state: off}\n");
  const std::string json = read_file(out + "/summary.json");
  CHECK(json_number(json, "workers_lost") == 1);
  CHECK(json_number(json, "workers_joined") == 1);

  int joins = 0;
  double downloaded = -1;
  for (const Event& e : events_of(out + "/events.csv")) {
    if (e.worker != 1 || e.kind != "join") continue;
    ++joins;
    CHECK(e.peer == 0);                                   // from the lowest live rank
    CHECK(e.start_s == doctest::Approx(back));            // as soon as its host is back
    CHECK(e.bytes > 5.0e6 * 4);                           // θ, at least, priced as the 5M-parameter model
    downloaded = e.end_s;
  }
  CHECK(joins == 1);
  // The first round boundary of the group after the download: worker 1 trains from the next step.
  std::map<int, double> boundary_s;  // worker 0's sync steps and their times
  std::vector<int> steps_of_1;
  std::string eval0, eval1;
  for (const Metric& m : metrics_of(out + "/metrics.csv")) {
    if (m.worker == 0 && m.step % 4 == 0) boundary_s[m.step] = m.time_s;
    if (m.worker == 1) steps_of_1.push_back(m.step);
    if (m.step == 12 && m.worker == 0) eval0 = m.eval_loss;
    if (m.step == 12 && m.worker == 1) eval1 = m.eval_loss;
  }
  int admitted = 0;
  for (const auto& [step, time_s] : boundary_s) {
    if (time_s >= downloaded && admitted == 0) admitted = step;
  }
  REQUIRE(admitted > 0);
  REQUIRE(admitted < 12);
  std::vector<int> expected = {1};  // step 1 done before it was lost; step 2 lost with it
  for (int step = admitted + 1; step <= 12; ++step) expected.push_back(step);
  CHECK(steps_of_1 == expected);
  // Its absence ends when it goes in.
  for (const Event& e : events_of(out + "/events.csv")) {
    if (e.worker == 1 && e.kind == "away") CHECK(e.end_s == doctest::Approx(boundary_s[admitted]));
  }
  // With the current parameters: after the last round every member holds the same θ.
  CHECK(!eval0.empty());
  CHECK(eval1 == eval0);
}

TEST_CASE("world: a DDP worker lost with a bucket's all-reduce in flight comes back and trains to the end") {
  // DDP's gradients travel in two buckets on this scenario (1 MiB, then the rest of 20 MB), so a step
  // is three computes: forward, the backward's share of each bucket, an all-reduce started after each.
  // Worker 1 is lost during the second bucket's share of step 2, with the first bucket's all-reduce
  // started and not yet waited on; back 0.1 s later, it must drop that collective (the group redid it
  // without it) and train on with the group.
  const double lost = middle_of_compute("ddp", 5);
  const std::string out = run_with("rejoin-bucket", "ddp",
                                   "world:\n  events:\n    - {host: w-1, at: " + seconds(lost) + ", until: " +
                                       seconds(lost + 0.1) + ", state: off}\n");
  const std::string json = read_file(out + "/summary.json");
  CHECK(json_number(json, "workers_lost") == 1);
  CHECK(json_number(json, "workers_joined") == 1);
  int last_step_of_1 = 0;
  for (const Metric& m : metrics_of(out + "/metrics.csv")) {
    if (m.worker == 1) last_step_of_1 = std::max(last_step_of_1, m.step);
  }
  CHECK(last_step_of_1 == 12);
}

TEST_CASE("world: a speed profile that halves a host's speed doubles its compute intervals") {
  const std::string out = run_with("half-speed", "ddp", "world:\n  events:\n    - {host: w-1, at: 0 s, speed: 0.5}\n");
  std::vector<double> base, slow;
  for (const Event& e : events_of(run_dir(baseline(), "ddp") + "/events.csv")) {
    if (e.worker == 1 && e.kind == "compute") base.push_back(e.end_s - e.start_s);
  }
  for (const Event& e : events_of(out + "/events.csv")) {
    if (e.worker == 1 && e.kind == "compute") slow.push_back(e.end_s - e.start_s);
  }
  REQUIRE(base.size() % 12 == 0);  // 12 steps, each the same spans (DDP: the forward, then one per bucket)
  REQUIRE(slow.size() == base.size());
  // events.csv writes times to 9 significant digits: a span of a run tens of seconds long is known to
  // about 1e-6 s at each end.
  for (size_t i = 0; i < base.size(); ++i) CHECK(std::abs(slow[i] - 2 * base[i]) <= 4e-6 + 1e-6 * base[i]);
}

TEST_CASE("world: random churn gives the same files, byte for byte, for the same scenario and seed") {
  const std::string world = "world:\n  churn:\n    - {hosts: [\"w-*\"], mtbf: 20 s, mttr: 5 s}\n";
  const std::string a = faults_dir("churn-a", world), b = faults_dir("churn-b", world);
  for (const std::string& dir : {a, b}) {
    CliResult r = run_locosim("run s.yaml --policy ddp --policy diloco", dir);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  }
  for (const char* policy : {"ddp", "diloco"}) {
    CAPTURE(policy);
    CHECK(json_number(read_file(run_dir(a, policy) + "/summary.json"), "workers_lost") > 0);
    for (const char* file : {"metrics.csv", "events.csv", "links.csv", "trace.json", "summary.json"}) {
      CAPTURE(file);
      CHECK(read_file(run_dir(a, policy) + "/" + file) == read_file(run_dir(b, policy) + "/" + file));
    }
  }
}

TEST_CASE("world: asynchronous DiLoCo ends when a worker's link goes off for good: the worker is counted lost") {
  // Worker 1's uplink goes off at 1 s, during its first push, and never comes back: every push it
  // makes fails. It used to train and push forever, and the run never ended; it leaves at its first
  // failed push, lost with its round, and the others finish the run's work.
  const std::string dir =
      async_faults_dir("async-link-gone", "world:\n  events:\n    - {link: w-1.up, at: 1 s, state: off}\n");
  CliResult r = run_bounded("run s.yaml --policy async_diloco", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string out = run_dir(dir, "async_diloco");
  const std::string json = read_file(out + "/summary.json");
  CHECK(json_number(json, "workers_lost") == 1);
  CHECK(std::isfinite(json_number(json, "final_eval_loss")));
  bool away = false, discarded = false;
  for (const Event& e : events_of(out + "/events.csv")) {
    away |= e.worker == 1 && e.kind == "away" && e.start_s == doctest::Approx(1);
    discarded |= e.worker == 1 && e.kind == "discard" && e.end_s == doctest::Approx(1);
    if (e.worker == 1 && (e.kind == "compute" || e.kind == "send")) CHECK(e.start_s <= 1);
  }
  CHECK(away);
  CHECK(discarded);
}

TEST_CASE("world: asynchronous DiLoCo whose server's host goes off fails naming it, or waits for it to come back") {
  // The server runs on w-0 (no relay). Off for good at 0.1 s, before the run's work is in: the
  // others' pushes can never land, and the run fails saying so (it used to exit with SimGrid's
  // "Cannot start actor on failed host").
  const std::string gone =
      async_faults_dir("async-server-gone", "world:\n  events:\n    - {host: w-0, at: 0.1 s, state: off}\n");
  CliResult r = run_bounded("run s.yaml --policy async_diloco", gone);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("every worker away") != std::string::npos);
  CHECK(r.err.find("the server's host w-0 (rank 0's: the platform has no relay) is off for good") != std::string::npos);
  CHECK(r.err.find("Cannot start actor") == std::string::npos);
  // Off from 0.1 s to 3 s: pushes fail (not applied) while it is off; the server, its state kept,
  // applies them again once it is back, and the run finishes without rank 0 (lost: no handover).
  const std::string back = async_faults_dir(
      "async-server-back", "world:\n  events:\n    - {host: w-0, at: 0.1 s, until: 3 s, state: off}\n");
  r = run_bounded("run s.yaml --policy async_diloco", back);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string json = read_file(run_dir(back, "async_diloco") + "/summary.json");
  CHECK(json_number(json, "workers_lost") == 1);
  CHECK(json_number(json, "syncs_aborted") > 0);
  CHECK(json_number(json, "wall_clock_s") > 3);
  CHECK(std::isfinite(json_number(json, "final_eval_loss")));
}

TEST_CASE("world: the summary's wall-clock covers a worker lost after the others finished") {
  // Asynchronous DiLoCo: worker 1's uplink carries 1% of its bandwidth, so its first push is still
  // on the wire when the others have done the run's work; it is lost at 30 s. The run lasted until
  // then (its events run to 30 s, links.csv too); the summary said the others' last row, about 16 s.
  const std::string dir = async_faults_dir("async-late-loss", "world:\n  events:\n"
                                                              "    - {link: w-1.up, at: 0 s, bandwidth: 0.01}\n"
                                                              "    - {host: w-1, at: 30 s, state: off}\n");
  CliResult r = run_bounded("run s.yaml --policy async_diloco", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string out = run_dir(dir, "async_diloco");
  const double wall_clock_s = json_number(read_file(out + "/summary.json"), "wall_clock_s");
  CHECK(last_event_end(out + "/events.csv") == doctest::Approx(30));
  CHECK(wall_clock_s == doctest::Approx(30));
}

TEST_CASE("world: a group that every worker has left restarts from its last handover point when one comes back") {
  // Every host goes off in the middle of step 6's compute and is back 5 s later. The group's last
  // handover point is the end of step 4's sync (DiLoCo, H = 4): each worker restores it from its own
  // disk (no relay; a `join` of 0 bytes, from no peer), redoes steps 5 and 6 and trains to the end.
  // The run used to stop with "every worker away".
  const AllAway a = all_away("diloco");
  const double lost = a.lost_s, back = a.back_s;
  const std::string out = run_with("all-away", "diloco", a.world);
  const std::string json = read_file(out + "/summary.json");
  CHECK(json_number(json, "workers_lost") == 3);
  CHECK(json_number(json, "workers_joined") == 3);
  CHECK(json_number(json, "wall_clock_s") > back);
  std::map<int, int> joins;
  for (const Event& e : events_of(out + "/events.csv")) {
    if (e.kind == "join") {
      ++joins[e.worker];
      CHECK(e.start_s == doctest::Approx(back));
      CHECK(e.end_s == doctest::Approx(back));
      CHECK(e.bytes == 0);
      CHECK(e.peer == -1);
    }
    if (e.kind == "away") {
      CHECK(e.start_s == doctest::Approx(lost));
      CHECK(e.end_s == doctest::Approx(back));
    }
  }
  CHECK(joins == std::map<int, int>{{0, 1}, {1, 1}, {2, 1}});
  // Steps 1-5 before the loss (step 6 lost with it), then 5-12 again from the handover point at 4.
  std::map<int, std::vector<int>> steps;
  for (const Metric& m : metrics_of(out + "/metrics.csv")) steps[m.worker].push_back(m.step);
  const std::vector<int> expected = {1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10, 11, 12};
  for (int w = 0; w < 3; ++w) CHECK(steps[w] == expected);
}

TEST_CASE("world: a group that every worker has left restarts from the relay's copy, or not at all without a handover") {
  // With a relay, the workers back download the handover point from it (peer K = 3), all at once.
  const AllAway a = all_away("diloco");
  const std::string dir = faults_dir("all-away-relay", a.world);
  write_file(dir + "/s.yaml", replaced(read_file(dir + "/s.yaml"), "  hosts:\n",
                                       "  relay: {uplink: {bandwidth: 1 Gbps, latency: 5 ms}, downlink: {bandwidth: "
                                       "1 Gbps, latency: 5 ms}}\n  hosts:\n"));
  CliResult r = run_bounded("run s.yaml --policy diloco", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string out = run_dir(dir, "diloco");
  const std::string json = read_file(out + "/summary.json");
  CHECK(json_number(json, "workers_joined") == 3);
  CHECK(json_number(json, "steps") == 12);
  int joins = 0;
  for (const Event& e : events_of(out + "/events.csv")) {
    if (e.kind != "join") continue;
    ++joins;
    CHECK(e.peer == 3);
    CHECK(e.start_s == doctest::Approx(a.back_s));
    CHECK(e.bytes > 5.0e6 * 4);
  }
  CHECK(joins == 3);
  // Streaming DiLoCo always has a fragment's sync in flight: no handover point, no restart, and the
  // message says so.
  const std::string streaming = faults_dir("all-away-streaming", all_away("streaming_diloco").world);
  r = run_bounded("run s.yaml --policy streaming_diloco", streaming);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("policy streaming_diloco has no handover point, so a group that every worker has left cannot "
                   "restart") != std::string::npos);
}
