// The quorum syncer end to end in the simulator: its bytes in events.csv against the README's formula
// (P · b + 8 up and P · 4 + 16 down per push, through the syncer's host), learners that never wait for
// a merge (and do when asked to), updates.csv with every push merged once, and a push that fails.
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "models/llama.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::testing;

namespace {

std::string scenario(const std::string& policies) {
  std::string yaml = small_scenario_yaml();
  return yaml.substr(0, yaml.find("policies:")) + "policies:\n" + policies;
}

double tiny_params() {
  LlamaConfig cfg = LlamaConfig::preset("tiny");
  cfg.seq_len = 16;
  double params = 0;
  for (const auto& p : TinyLlama(cfg)->parameters()) params += static_cast<double>(p.numel());
  return params;
}

struct Update {
  int worker = 0;
  int version = 0, staleness = 0, steps = 0;
};

std::vector<Update> updates_of(const std::string& csv) {
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "time_s,worker,version,staleness,steps");
  std::vector<Update> out;
  while (std::getline(in, line)) {
    double time_s = 0;
    Update u;
    REQUIRE(std::sscanf(line.c_str(), "%lf,%d,%d,%d,%d", &time_s, &u.worker, &u.version, &u.staleness, &u.steps) == 5);
    out.push_back(u);
  }
  return out;
}

}  // namespace

TEST_CASE("quorum syncer: each push sends P * b + 8 bytes to the syncer and receives P * 4 + 16, and learners never wait") {
  const std::string dir = scratch_dir("quorum-bytes");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", scenario("  - {name: quorum_syncer, inner_steps: 4}\n"
                                       "  - {name: quorum_syncer, label: fp16, inner_steps: 4, wire: fp16}\n"
                                       "  - {name: quorum_syncer, label: waiting, inner_steps: 4, quorum: 2, wait_for_merge: true}\n"));
  const CliResult r = run_locosim("run s.yaml -o runs", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const double params = tiny_params();
  for (const auto& [label, b] : {std::pair{std::string("quorum_syncer"), 4.0}, std::pair{std::string("fp16"), 2.0},
                                 std::pair{std::string("waiting"), 4.0}}) {
    CAPTURE(label);
    const std::string run = dir + "/runs/small/" + label;
    // No relay: the syncer is on rank 0's host, so only rank 1's pushes and replies cross a link
    // (events.csv has both ends of each flow: rank 0's rows are the syncer's side).
    int sends = 0, recvs = 0, served = 0, waits = 0;
    for (const EventRow& e : event_rows(read_file(run + "/events.csv"))) {
      if (e.kind == "wait") ++waits;
      if (e.kind != "send" && e.kind != "recv") continue;
      const bool up = (e.kind == "send") == (e.worker == 1);
      CHECK(e.bytes == (up ? params * b + 8 : params * 4 + 16));
      if (e.worker == 1) (e.kind == "send" ? sends : recvs) += 1;
      if (e.worker == 0 && e.kind == "recv") ++served;
    }
    CHECK(sends >= 1);
    CHECK(recvs == sends);
    CHECK(served == sends);
    // Rank 1's pushes cross its slow uplink: rank 0 waits for them only when it waits for the merge.
    if (label == "waiting") {
      CHECK(waits > 0);
    } else {
      CHECK(waits == 0);
    }
    // Every push merged once, with its 4 steps; the run ends once 2 learners × 12 steps are in.
    int steps = 0, of_rank_1 = 0;
    for (const Update& u : updates_of(read_file(run + "/updates.csv"))) {
      CHECK(u.steps == 4);
      steps += u.steps;
      of_rank_1 += u.worker == 1 ? 1 : 0;
    }
    CHECK(of_rank_1 == sends);
    CHECK(steps >= 24);
    CHECK(steps < 24 + 2 * 4);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("quorum syncer: a push whose link is cut is not merged, and its learner trains on from its last reply") {
  const std::string dir = scratch_dir("quorum-cut");
  write_corpus(dir + "/corpus.txt", 20000);
  // The syncer on a relay; rank 1's uplink is off for 0.1 ms at 0.1 s, in the middle of its first push
  // (0.4 s on its 10 Mbps uplink): that push fails, and the pushes it makes while the link is off.
  std::string yaml = "world:\n  events:\n    - {link: slow.up, at: 0.1 s, until: 0.1001 s, state: off}\n" +
                     scenario("  - {name: quorum_syncer, inner_steps: 4, quorum: 1}\n");
  yaml = replaced(yaml, "data:", "  relay: {uplink: {bandwidth: 1 Gbps, latency: 5 ms}, downlink: {bandwidth: 1 Gbps, latency: 5 ms}}\ndata:");
  write_file(dir + "/s.yaml", yaml);
  const CliResult r = run_locosim("run s.yaml -o runs", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string run = dir + "/runs/small/quorum_syncer";
  int merged_of_1 = 0;
  for (const Update& u : updates_of(read_file(run + "/updates.csv"))) merged_of_1 += u.worker == 1 ? 1 : 0;
  // Rank 1's rounds in metrics.csv: the failed pushes aborted, each later one committed and merged.
  int aborted = 0, committed = 0;
  std::istringstream in(read_file(run + "/metrics.csv"));
  for (std::string line; std::getline(in, line);) {
    if (line.find(",1,") == std::string::npos) continue;
    const size_t at = line.find(',');
    if (line.compare(at, 3, ",1,") != 0) continue;
    if (line.size() >= 8 && line.compare(line.size() - 8, 8, ",aborted") == 0) ++aborted;
    if (line.size() >= 10 && line.compare(line.size() - 10, 10, ",committed") == 0) ++committed;
  }
  CHECK(aborted > 0);
  CHECK(committed > 0);
  CHECK(merged_of_1 == committed);
  std::filesystem::remove_all(dir);
}
