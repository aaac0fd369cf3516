// The real backend against the simulator: same losses and final parameters for every policy, the
// same run-folder format, the parameter-server policies' pushes in the simulator's order; the
// launcher's table and refusals. real_failure_test.cpp has the ranks that die.
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/policies.hpp"
#include "real/auth_store.hpp"
#include "real/store_server.hpp"
#include "report/summary.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"
#include "tests/registered_policies.hpp"

using namespace locosim;
using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

// Every registered policy, by its registry example (PolicyTraits::example: it communicates within
// the test's 12 steps).
std::string parity_scenario() {
  std::string yaml = replaced(small_scenario_yaml(), "eval_fraction: 0.1}", "eval_fraction: 0.1, validation_fraction: 0.1}");
  return yaml.substr(0, yaml.find("policies:")) + registered_policies_block();
}

std::string column_header(const std::string& path) {
  std::string text = read_file(path);
  return text.substr(0, text.find('\n'));
}

}  // namespace

TEST_CASE("real: every policy gives the simulator's losses, final parameters and validation loss with 2 ranks on CPU") {
  const std::string dir = scratch_dir("parity");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", parity_scenario());
  REQUIRE(run_locosim("run s.yaml -o sim", dir).exit_code == 0);
  for (const std::string& name : registered_policy_names()) {
    CAPTURE(name);
    CliResult r = run_locosim("s.yaml --policy " + name + " --spawn 2 -o real --timeout 30", dir, "locosim-real");
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string sim = dir + "/sim/small/" + name, real = dir + "/real/small/" + name;
    // Identical in fp32: the real backend reduces in rank order exactly as the simulator does.
    CHECK(without_times(read_file(real + "/metrics.csv")) == without_times(read_file(sim + "/metrics.csv")));
    CHECK(read_file(real + "/exact_losses.csv") == read_file(sim + "/exact_losses.csv"));  // to the last bit
    std::string print = read_file(sim + "/summary.json");
    print = print.substr(print.find("params_fingerprint"), 40);
    CHECK(read_file(real + "/summary.json").find(print) != std::string::npos);
    // Every finished rank's final model scored on the validation split, averaged in rank order.
    const RunSummary simulated = read_summary_json(sim + "/summary.json"), trained = read_summary_json(real + "/summary.json");
    REQUIRE(simulated.final_validation_loss);
    CHECK(trained.final_validation_loss == simulated.final_validation_loss);
  }
  fs::remove_all(dir);
}

TEST_CASE("real: the launcher prints the run's table, and a finished run is not computed again but with --force or another --reduce") {
  const std::string dir = scratch_dir("again");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  const std::string run = dir + "/real/small/ddp";
  const auto launch = [&](const std::string& extra) {
    CliResult r = run_locosim("s.yaml -p ddp --spawn 2 -o real " + extra, dir, "locosim-real");
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
  };
  const std::string first = launch("");
  CHECK(first.find("policy  wall-clock") != std::string::npos);
  CHECK(first.find("\nddp ") != std::string::npos);
  CHECK(first.find("run folder: real/small/ddp") != std::string::npos);
  CHECK(first.find("finished earlier") == std::string::npos);
  const auto written = fs::last_write_time(run + "/metrics.csv");

  const std::string again = launch("");
  CHECK(again.find("real/small/ddp finished earlier") != std::string::npos);
  CHECK(again.find("\nddp ") != std::string::npos);  // its table still
  CHECK(fs::last_write_time(run + "/metrics.csv") == written);

  for (const std::string extra : {"--reduce native", "--force"}) {
    CAPTURE(extra);
    CHECK(launch(extra).find("finished earlier") == std::string::npos);
  }
  CHECK(read_file(run + "/resolved.yaml").rfind("# locosim-real --reduce exact run of policy 'ddp'\n", 0) == 0);
  fs::remove_all(dir);
}

TEST_CASE("real: the launcher's run folder has the simulator's files and columns, and honours report.trace") {
  const std::string dir = scratch_dir("format");
  write_corpus(dir + "/corpus.txt", 20000);
  const auto files_of = [](const std::string& folder) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(folder)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  };
  for (const std::string trace : {"messages", "none"}) {
    CAPTURE(trace);
    const std::string out = "trace-" + trace;
    write_file(dir + "/s.yaml", "report: {trace: " + trace + "}\n" + small_scenario_yaml());
    REQUIRE(run_locosim("run s.yaml -o " + out + "/sim -p ddp", dir).exit_code == 0);
    REQUIRE(run_locosim("s.yaml -p ddp --spawn 2 -o " + out + "/real", dir, "locosim-real").exit_code == 0);
    const std::string sim = dir + "/" + out + "/sim/small/ddp", real = dir + "/" + out + "/real/small/ddp";
    CHECK(files_of(sim) == files_of(real));
    CHECK(fs::exists(real + "/trace.json") == (trace != "none"));
    for (const char* csv : {"metrics.csv", "events.csv"}) {
      CHECK(column_header(sim + "/" + csv) == column_header(real + "/" + csv));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("real: bad options, a missing job secret and a world section are refused with plain words, exit 2") {
  const std::string dir = scratch_dir("refusals");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  const std::string rank0 = "-u LOCOSIM_JOB_SECRET -u LOCOSIM_JOB_SECRET_FILE RANK=0 WORLD_SIZE=2 MASTER_PORT=1";
  struct Case {
    std::string args, environment, expected;
  };
  const std::vector<Case> cases = {
      {"s.yaml -p ddp --spawn 0", "", "--spawn: must be an integer in [1, 4096], got '0'"},
      {"s.yaml -p ddp --timeout 0 --spawn 2", "", "--timeout: must be an integer in [1, 86400], got '0'"},
      {"s.yaml -p ddp --spawn 2 -o ''", "", "-o/--output:"},
      // A rank without the job's secret never listens or connects: it says how to make one.
      {"s.yaml -p ddp", rank0, "no job secret"},
      {"s.yaml -p ddp", rank0 + " LOCOSIM_JOB_SECRET=abc", "expected 64 hex digits"},
      {"s.yaml --serve-relay 127.0.0.1:1", "-u LOCOSIM_JOB_SECRET -u LOCOSIM_JOB_SECRET_FILE", "no job secret"},
      {"s.yaml --serve-relay 29600", "", "--serve-relay"},
      {"s.yaml -p dpp --spawn 2", "", "--policy dpp: not in the scenario (ddp, diloco); did you mean 'ddp'?"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const CliResult r = run_locosim(c.args, dir, "locosim-real", c.environment);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.err.find(c.expected) != std::string::npos, r.err);
  }
  // A secret file others may read is no secret.
  write_file(dir + "/job.secret", std::string(64, 'a'));
  fs::permissions(dir + "/job.secret", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  CliResult r = run_locosim("s.yaml -p ddp", dir, "locosim-real", rank0 + " LOCOSIM_JOB_SECRET_FILE=job.secret");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("chmod 600") != std::string::npos);
  // The world section is the simulator's: the real backend says so instead of ignoring it.
  write_file(dir + "/w.yaml", replaced(small_scenario_yaml(), "data:", "world:\n  events:\n    - {at: 1 s, host: slow, state: off}\ndata:"));
  r = run_locosim("w.yaml -p ddp --spawn 2", dir, "locosim-real");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("w.yaml:") != std::string::npos);
  CHECK(r.err.find("world: a changing world is the simulator's") != std::string::npos);
  fs::remove_all(dir);
}

namespace {

// One row of updates.csv.
struct UpdateRow {
  int worker = 0, version = 0, staleness = 0, steps = 0;
};

// What a parameter-server policy's run without a fixed order left (updates.csv's rows, and how many of
// metrics.csv's rows say their push committed).
struct FreeRun {
  std::vector<UpdateRow> updates;
  int committed = 0;
};

// A parameter-server policy on 3 ranks: `policies` holds two entries, labelled `windows` (windows that
// fix the order of the updates on both backends) and `free` (the cluster's own order). Both run in the
// simulator and with locosim-real --spawn 3; `windows` must give the simulator's metrics, updates.csv
// (times aside) and final parameters. Returns what the `free` run on the real backend left.
FreeRun server_policy_on_three_ranks(const std::string& name, const std::string& policies) {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 20000);
  std::string yaml = small_scenario_yaml();
  yaml = yaml.substr(0, yaml.find("policies:"));
  yaml = replaced(yaml, "  hosts:\n", "  hosts:\n    - {name: third, accelerator: gpu, uplink: {bandwidth: 50 Mbps, latency: 10 ms},"
                                      " downlink: {bandwidth: 500 Mbps, latency: 10 ms}}\n");
  write_file(dir + "/s.yaml", yaml + "policies:\n" + policies);
  REQUIRE(run_locosim("run s.yaml -o sim", dir).exit_code == 0);
  for (const char* label : {"windows", "free"}) {
    CliResult r = run_locosim(std::string("s.yaml --policy ") + label + " --spawn 3 -o real --timeout 30", dir,
                              "locosim-real");
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
  }
  const std::string sim = dir + "/sim/small/windows", real = dir + "/real/small/windows";
  CHECK(without_times(read_file(real + "/metrics.csv")) == without_times(read_file(sim + "/metrics.csv")));
  CHECK(without_times(read_file(real + "/updates.csv")) == without_times(read_file(sim + "/updates.csv")));
  std::string print = read_file(sim + "/summary.json");
  print = print.substr(print.find("params_fingerprint"), 40);
  CHECK(read_file(real + "/summary.json").find(print) != std::string::npos);

  FreeRun free;
  std::istringstream in(read_file(dir + "/real/small/free/updates.csv"));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    double time_s = 0;
    UpdateRow row;
    REQUIRE(std::sscanf(line.c_str(), "%lf,%d,%d,%d,%d", &time_s, &row.worker, &row.version, &row.staleness,
                        &row.steps) == 5);
    free.updates.push_back(row);
  }
  const std::string metrics = read_file(dir + "/real/small/free/metrics.csv");
  for (size_t at = metrics.find(",committed"); at != std::string::npos; at = metrics.find(",committed", at + 1)) {
    ++free.committed;
  }
  fs::remove_all(dir);
  return free;
}

}  // namespace

TEST_CASE("real: asynchronous DiLoCo on 3 ranks applies the simulator's pushes in the same order, to the same numbers") {
  // Windows that hold every rank's push (a grace period longer than the run) fix the order of the
  // updates on both backends. With no grace period the order is the cluster's own; the run completes
  // and applies every push once: versions 1, 2, ... in order, each a committed row.
  const FreeRun free = server_policy_on_three_ranks(
      "async3", "  - {name: async_diloco, label: windows, inner_steps: 3, dylu: false, grace_s: 1000}\n"
                "  - {name: async_diloco, label: free, inner_steps: 3}\n");
  int version = 0, steps = 0;
  for (const UpdateRow& row : free.updates) {
    CHECK(row.version == ++version);
    steps += row.steps;
  }
  CHECK(steps >= 3 * 12);
  CHECK(free.committed == version);
}

TEST_CASE("real: the quorum syncer on 3 ranks merges every push once, and with windows of all 3 gives the simulator's numbers") {
  // quorum 3 with learners that wait for the merge: every window holds one push of each rank, merged in
  // rank order, on both backends. By default learners take the syncer's state at once: the windows are
  // the cluster's own, and every push is merged exactly once (a window's rows share its version).
  const FreeRun free = server_policy_on_three_ranks(
      "quorum3", "  - {name: quorum_syncer, label: windows, inner_steps: 3, quorum: 3, wait_for_merge: true}\n"
                 "  - {name: quorum_syncer, label: free, inner_steps: 3}\n");
  int last_version = 0, steps = 0;
  for (const UpdateRow& row : free.updates) {
    CHECK(row.version >= last_version);
    CHECK(row.steps == 3);
    last_version = row.version;
    steps += row.steps;
  }
  CHECK(steps >= 3 * 12);
  CHECK(free.committed == static_cast<int>(free.updates.size()));
}

TEST_CASE("real: DeMo's all-gathers through the relay give the simulator's losses, each rank uploading once to it") {
  std::string yaml = replaced(small_scenario_yaml(), "steps: 12", "steps: 8");
  yaml = replaced(yaml, "data:", "    - {name: third, accelerator: gpu, uplink: {bandwidth: 20 Mbps, latency: 10 ms}, "
                                 "downlink: {bandwidth: 200 Mbps, latency: 10 ms}}\n"
                                 "  relay: {uplink: {bandwidth: 1 Gbps, latency: 5 ms}, downlink: {bandwidth: 1 Gbps, "
                                 "latency: 5 ms}}\nnetwork: {all_gather: relay}\ndata:");
  yaml = yaml.substr(0, yaml.find("policies:")) + "policies:\n  - {name: demo, lr: 1.0e-3, topk: 8, chunk: 16}\n";
  const std::string dir = scratch_dir("relay");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", yaml);
  REQUIRE(run_locosim("run s.yaml -o sim", dir).exit_code == 0);
  CliResult r = run_locosim("s.yaml --spawn 3 -o real --timeout 30", dir, "locosim-real");
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("no --relay") == std::string::npos);  // the launcher served one
  const std::string sim = dir + "/sim/small/demo", real = dir + "/real/small/demo";
  CHECK(without_times(read_file(real + "/metrics.csv")) == without_times(read_file(sim + "/metrics.csv")));
  CHECK(read_file(real + "/exact_losses.csv") == read_file(sim + "/exact_losses.csv"));
  // Every rank's all-gathers went to the relay (peer 3, the world size): one upload of its payload
  // and the two others' payloads down, as the simulator's relay moves them.
  std::istringstream events(read_file(real + "/events.csv"));
  std::string line;
  std::getline(events, line);
  std::map<std::string, int> relay_rows;  // "worker kind" -> rows with the relay as peer
  int sends = 0;
  while (std::getline(events, line)) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
    if (line.back() == ',') f.push_back("");  // no peer (compute)
    REQUIRE(f.size() == 6);
    if (f[1] == "send") ++sends;
    if (f[5] == "3") {
      ++relay_rows[f[0] + " " + f[1]];
      if (f[1] == "recv") CHECK(std::stod(f[4]) > 0);
    }
  }
  CHECK(sends > 0);
  for (const char* worker : {"0", "1", "2"}) {
    CAPTURE(worker);
    CHECK(relay_rows[std::string(worker) + " send"] == 8);  // one all-gather per step
    CHECK(relay_rows[std::string(worker) + " recv"] == 8);
  }
  r = run_locosim("s.yaml --spawn 3 -o again --relay relay-host", dir, "locosim-real");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--relay relay-host: expected host:port") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/again"));
  fs::remove_all(dir);
}

TEST_CASE("real: a store's clone is a second authenticated connection to the same keys") {
  const JobSecret secret = JobSecret::generate();
  StoreServerOptions options;
  options.world_size = 2;
  StoreServer server(options, secret);
  AuthStore store("127.0.0.1", server.port(), secret, 1, 2, std::chrono::milliseconds(2000), options.limits);
  store.set("before", std::vector<uint8_t>{7});
  c10::intrusive_ptr<c10d::Store> copy = store.clone();
  REQUIRE(copy.get() != &store);
  CHECK(copy->get("before") == std::vector<uint8_t>{7});
  copy->set("after", std::vector<uint8_t>{8, 9});
  CHECK(store.get("after") == std::vector<uint8_t>{8, 9});
  CHECK(copy->add("count", 2) == 2);
  CHECK(store.add("count", 3) == 5);
  CHECK(copy->getTimeout() == std::chrono::milliseconds(2000));
  CHECK(server.peers_dropped() == 0);
}
