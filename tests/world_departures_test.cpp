// Workers that leave for good, and groups that every worker left (scenarios/tests/faults-small.yaml):
// asynchronous DiLoCo ends when a worker's link or the server's host goes off for good; the summary's
// wall-clock covers a worker lost after the others finished; a group that every worker left restarts
// from its last handover point, or from the relay's copy. Helpers: tests/world_run_util.hpp.
#include <map>

#include "tests/world_run_util.hpp"

using namespace world_run;

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
