// A changing world end to end (scenarios/tests/faults-small.yaml): every policy lives through a host
// lost in the middle of a collective, a host lost mid-compute and a link cut and restored; a worker
// that comes back downloads the group's state and is back in the next round; a speed profile doubles
// compute intervals exactly; random churn gives the same files, byte for byte, for the same seed.
// Workers that leave for good, and groups that all leave: tests/world_departures_test.cpp.
#include <map>

#include "tests/world_run_util.hpp"

using namespace world_run;

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
