// What tests/world_run_test.cpp and tests/world_departures_test.cpp share: the faults scenario
// (scenarios/tests/faults-small.yaml) in a scratch folder with a `world:` section, its static run
// (where to strike), and readers of the run folder's events and metrics.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"
#include "tests/registered_policies.hpp"

namespace world_run {

using namespace locosim::testing;

// Every registered policy, by its registry example, but asynchronous DiLoCo and the quorum syncer: their
// workers leave for good where the others redo or skip, and the survivors train the run's work in
// their place (asynchronous DiLoCo's own cases below; the quorum syncer's failed push in
// tests/quorum_syncer_events_test.cpp).
inline const std::set<std::string> kOwnCases = {"async_diloco", "quorum_syncer"};
inline const std::vector<std::string> kPolicies = registered_policy_names(kOwnCases);

struct Event {
  int worker = 0;
  std::string kind;
  double start_s = 0, end_s = 0, bytes = 0;
  int peer = -1;
};

inline std::vector<Event> events_of(const std::string& path) {
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

inline std::vector<Metric> metrics_of(const std::string& path) {
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

inline std::string seconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f s", s);
  return buf;
}

// A scratch folder with corpus.txt and s.yaml: the faults scenario plus `world` (YAML, may be empty),
// its collectives' flows `flows` (exact or aggregated).
inline std::string faults_dir(const std::string& name, const std::string& world,
                              const std::string& flows = "exact") {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 60000);
  std::string scenario = replaced(read_file("scenarios/tests/faults-small.yaml"), "path: kjv", "path: corpus.txt");
  scenario = with_policies(scenario, registered_policies_block(kOwnCases));
  scenario = replaced(scenario, "all_gather: ring}", "all_gather: ring, flows: " + flows + "}");
  write_file(dir + "/s.yaml", scenario + world);
  return dir;
}

inline std::string run_dir(const std::string& dir, const std::string& policy) {
  return dir + "/runs/faults-small/" + policy;
}

// The static world's run of every policy: where to strike. Timing only (README "Timing-only runs"):
// the same events, times and wall-clock to the last byte as a run that trains, without the steps.
inline const std::string& baseline() {
  static const std::string dir = [] {
    const std::string d = faults_dir("world-baseline", "numerics: none\n");
    CliResult r = run_locosim("run s.yaml", d);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return d;
  }();
  return dir;
}

// The middle of the `nth` (0-based) compute of worker 1 in the static run.
inline double middle_of_compute(const std::string& policy, int nth) {
  for (const Event& e : events_of(run_dir(baseline(), policy) + "/events.csv")) {
    if (e.worker == 1 && e.kind == "compute" && nth-- == 0) return (e.start_s + e.end_s) / 2;
  }
  FAIL("worker 1 of " << policy << " has too few steps");
  return 0;
}

// The middle of worker 1's longest send in the static run: the middle of a collective. Of sends
// as long to the microsecond (DeMo's are all alike), the first: early enough that the run goes on
// past the cut.
inline double middle_of_longest_send(const std::string& policy) {
  Event longest;
  for (const Event& e : events_of(run_dir(baseline(), policy) + "/events.csv")) {
    if (e.worker == 1 && e.kind == "send" && e.end_s - e.start_s > longest.end_s - longest.start_s + 1e-6) longest = e;
  }
  REQUIRE(longest.end_s > longest.start_s);
  return (longest.start_s + longest.end_s) / 2;
}

// Runs `policy` alone on the faults scenario with `world`; checks it finished with a finite loss.
inline std::string run_with(const std::string& name, const std::string& policy, const std::string& world,
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
inline std::string async_faults_dir(const std::string& name, const std::string& world) {
  const std::string dir = faults_dir(name, world);
  write_file(dir + "/s.yaml",
             replaced(read_file(dir + "/s.yaml"), "policies:\n", "policies:\n  - {name: async_diloco, inner_steps: 4}\n"));
  return dir;
}

// Runs the CLI stopped after 120 s (timeout's exit 124): a run that never ends fails the test instead
// of hanging it (env(1) runs `timeout` with the rest as its command).
inline CliResult run_bounded(const std::string& args, const std::string& dir) {
  return run_locosim(args, dir, "locosim", "timeout 120");
}

// Every host off in the middle of `policy`'s step 6 compute, back 5 s later: a world section, and
// when the hosts go off and come back.
struct AllAway {
  double lost_s = 0, back_s = 0;
  std::string world;
};
inline AllAway all_away(const std::string& policy) {
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
inline double last_event_end(const std::string& path) {
  double end = 0;
  for (const Event& e : events_of(path)) end = std::max(end, e.end_s);
  return end;
}

}  // namespace world_run
