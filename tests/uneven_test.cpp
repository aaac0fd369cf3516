// Uneven hardware end to end: two GPU types 2× apart on fast links. Synchronous DiLoCo makes the
// fast GPUs wait for the slow ones; DiLoCo with timed rounds and asynchronous DiLoCo keep every GPU
// busy. Expected values come from the platform (the speed ratio), not from a run.
#include <cmath>
#include <map>
#include <regex>
#include <sstream>

#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim::testing;

namespace {

constexpr double kFastTflops = 200, kSlowTflops = 100;  // the platform below: speeds 2× apart
constexpr int kInnerSteps = 10;

std::string uneven_yaml(const std::string& policies, const std::string& slow_tflops = "100") {
  return "name: uneven\n"
         "seed: 5\n"
         "platform:\n"
         "  accelerators: {fast: {peak: 200 TFLOPS, efficiency: 0.4}, slow: {peak: " + slow_tflops +
         " TFLOPS, efficiency: 0.4}}\n"
         "  hosts:\n"
         "    - {name: f, accelerator: fast, count: 2, uplink: {bandwidth: 100 Gbps, latency: 0.1 ms},"
         " downlink: {bandwidth: 100 Gbps, latency: 0.1 ms}}\n"
         "    - {name: s, accelerator: slow, count: 2, uplink: {bandwidth: 100 Gbps, latency: 0.1 ms},"
         " downlink: {bandwidth: 100 Gbps, latency: 0.1 ms}}\n"
         "network: {all_reduce: ring, all_gather: ring}\n"
         "data: {path: corpus.txt, eval_fraction: 0.1}\n"
         "model: {preset: tiny, seq_len: 16}\n"
         "train: {steps: 40, batch_size: 4, eval_every: 20, eval_batches: 1, optimizer: {lr: 3.0e-3}}\n"
         "timing: {params: 5.0e6, tokens_per_step: 262144}\n"
         "policies:\n" + policies;
}

std::string run_uneven(const std::string& name, const std::string& yaml) {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 30000);
  write_file(dir + "/s.yaml", yaml);
  CliResult r = run_locosim("run s.yaml -o runs", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return dir + "/runs/uneven/";
}

// summary.json's per-accelerator {min, mean, max} utilization.
std::map<std::string, std::array<double, 3>> utilization_by_type(const std::string& json) {
  std::map<std::string, std::array<double, 3>> out;
  const std::regex entry(R"re("accelerator": "(\w+)",\s*"max": ([0-9.e+-]+),\s*"mean": ([0-9.e+-]+),\s*"min": ([0-9.e+-]+))re");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), entry); it != std::sregex_iterator(); ++it) {
    out[(*it)[1]] = {std::stod((*it)[4]), std::stod((*it)[3]), std::stod((*it)[2])};
  }
  return out;
}

// metrics.csv: each worker's step count at each committed sync.
std::map<int, std::vector<int>> sync_steps(const std::string& csv) {
  std::map<int, std::vector<int>> out;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    if (cells.size() == 7 && cells[6] == "committed") out[std::stoi(cells[1])].push_back(std::stoi(cells[2]));
  }
  return out;
}

}  // namespace

TEST_CASE("uneven: synchronous DiLoCo idles the fast GPUs half the time, timed rounds and async DiLoCo keep every GPU busy") {
  const std::string runs = run_uneven("uneven-util",
                                      uneven_yaml("  - {name: diloco, inner_steps: 10}\n"
                                                  "  - {name: diloco, label: timed, inner_steps: 10, round: fastest}\n"
                                                  "  - {name: async_diloco, inner_steps: 10}\n"));
  // A fast GPU does a round's H steps in ratio = slow/fast of the slow GPU's time, then waits.
  const double ratio = kSlowTflops / kFastTflops;
  const auto sync = utilization_by_type(read_file(runs + "diloco/summary.json"));
  REQUIRE(sync.size() == 2);
  CHECK(sync.at("fast")[2] <= 0.55);
  CHECK(sync.at("fast")[0] >= ratio - 0.05);  // the rest of the gap is the all-reduce
  CHECK(sync.at("slow")[0] >= 0.95);
  for (const char* policy : {"timed", "async_diloco"}) {
    CAPTURE(policy);
    const auto busy = utilization_by_type(read_file(runs + policy + "/summary.json"));
    REQUIRE(busy.size() == 2);
    CHECK(busy.at("fast")[0] >= 0.95);
    CHECK(busy.at("slow")[0] >= 0.95);
  }
  // Timed rounds: H steps on a fast GPU, H·ratio on a slow one.
  const auto steps = sync_steps(read_file(runs + "timed/metrics.csv"));
  REQUIRE(steps.size() == 4);
  for (const auto& [worker, at] : steps) {
    CAPTURE(worker);
    REQUIRE(at.size() == 4);  // ⌈40 / H⌉ rounds
    const int per_round = worker < 2 ? kInnerSteps : static_cast<int>(kInnerSteps * ratio);
    CHECK(at[0] == per_round);
    for (size_t r = 1; r < at.size(); ++r) CHECK(at[r] - at[r - 1] == per_round);
  }
  // Asynchronous DiLoCo: DyLU gives the slow GPUs H·ratio steps a push once their speed is known.
  const auto pushes = sync_steps(read_file(runs + "async_diloco/metrics.csv"));
  for (int worker : {2, 3}) {
    const auto& at = pushes.at(worker);
    REQUIRE(at.size() >= 3);
    CHECK(at[2] - at[1] == static_cast<int>(kInnerSteps * ratio));
  }
}

TEST_CASE("uneven: timed rounds on identical GPUs are DiLoCo's rounds: the same parameters") {
  const std::string runs = run_uneven("uneven-same",
                                      uneven_yaml("  - {name: diloco, inner_steps: 10}\n"
                                                  "  - {name: diloco, label: timed, inner_steps: 10, round: fastest}\n",
                                                  "200"));
  std::smatch a, b;
  const std::string sync = read_file(runs + "diloco/summary.json"), timed = read_file(runs + "timed/summary.json");
  const std::regex print("\"params_fingerprint\": \"(\\w+)\"");
  REQUIRE(std::regex_search(sync, a, print));
  REQUIRE(std::regex_search(timed, b, print));
  CHECK(a[1] == b[1]);
}

TEST_CASE("uneven: timed and asynchronous DiLoCo give identical files for the same scenario and seed") {
  const std::string yaml = uneven_yaml(
      "  - {name: diloco, label: fastest, inner_steps: 10, round: fastest}\n"
      "  - {name: diloco, label: seconds, inner_steps: 10, round: seconds, round_s: 0.2}\n"
      "  - {name: async_diloco, label: dn-dylu, inner_steps: 10}\n"
      "  - {name: async_diloco, label: plain, inner_steps: 10, outer: nesterov, dylu: false, grace_s: 0.01}\n");
  const std::string first = run_uneven("uneven-det-a", yaml);
  const std::string second = run_uneven("uneven-det-b", yaml);
  for (const char* policy : {"fastest", "seconds", "dn-dylu", "plain"}) {
    for (const char* file : {"metrics.csv", "events.csv", "summary.json"}) {
      CAPTURE(policy);
      CAPTURE(file);
      CHECK(read_file(first + policy + "/" + file) == read_file(second + policy + "/" + file));
    }
  }
  for (const char* policy : {"dn-dylu", "plain"}) {
    CHECK(read_file(first + policy + "/updates.csv") == read_file(second + policy + "/updates.csv"));
  }
}

TEST_CASE("uneven: async DiLoCo's updates.csv has every push applied, in order, with its staleness") {
  const std::string runs = run_uneven("uneven-updates", uneven_yaml("  - {name: async_diloco, inner_steps: 10}\n"));
  std::istringstream in(read_file(runs + "async_diloco/updates.csv"));
  std::string line;
  std::getline(in, line);
  CHECK(line == "time_s,worker,version,staleness,steps");
  int rows = 0, steps = 0, stale = 0;
  double last_time = 0;
  while (std::getline(in, line)) {
    double time_s = 0;
    int worker = 0, version = 0, staleness = 0, n = 0;
    REQUIRE(std::sscanf(line.c_str(), "%lf,%d,%d,%d,%d", &time_s, &worker, &version, &staleness, &n) == 5);
    ++rows;
    CHECK(version == rows);
    CHECK(time_s >= last_time);
    CHECK(staleness >= 0);
    CHECK(staleness < version);
    stale += staleness > 0 ? 1 : 0;
    steps += n;
    last_time = time_s;
  }
  // Every push the workers made was applied, and together they hold the run's K × steps inner steps.
  int pushes = 0;
  for (const auto& [worker, at] : sync_steps(read_file(runs + "async_diloco/metrics.csv"))) pushes += static_cast<int>(at.size());
  CHECK(rows == pushes);
  CHECK(steps >= 4 * 40);
  CHECK(stale > 0);  // four workers that never wait for each other apply each other's stale work
}

TEST_CASE("uneven: bad timed-round and async entries fail with file, line and key") {
  const std::string dir = scratch_dir("uneven-bad");
  write_corpus(dir + "/corpus.txt", 30000);
  struct Case {
    const char* policy;
    const char* message;
  } cases[] = {
      {"  - {name: diloco, round: seconds}\n", "round_s"},
      {"  - {name: diloco, round: steps, round_s: 3}\n", "unknown key"},
      {"  - {name: diloco, round: weekly}\n", "round"},
      {"  - {name: async_diloco, inner_steps: 10, momentum_activation: 0.5}\n", "momentum_activation: must be <= 1/delay = 1/4"},
      {"  - {name: async_diloco, inner_steps: 41}\n", "inner_steps: must be <= train.steps"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.policy);
    write_file(dir + "/s.yaml", uneven_yaml(c.policy));
    CliResult r = run_locosim("check s.yaml", dir);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("s.yaml:14:") != std::string::npos);
    CHECK(r.err.find(c.message) != std::string::npos);
  }
}

TEST_CASE("uneven: timed rounds follow a GPU that slows down, and timed and async DiLoCo finish when a host is lost") {
  // A fast GPU at half speed from 0.2 s is as slow as the slow ones: in the rounds that follow, the
  // fastest member is the other fast GPU and worker 0 does the H/2 steps that fit.
  const std::string slowed = run_uneven(
      "uneven-slowed", replaced(uneven_yaml("  - {name: diloco, label: timed, inner_steps: 10, round: fastest}\n"),
                                "policies:\n", "world:\n  events:\n    - {host: f-0, at: 0.2 s, speed: 0.5}\npolicies:\n"));
  const auto at = sync_steps(read_file(slowed + "timed/metrics.csv"));
  REQUIRE(at.at(0).size() == 4);
  REQUIRE(at.at(1).size() == 4);
  CHECK(at.at(1)[3] - at.at(1)[2] == kInnerSteps);      // the other fast GPU: H
  CHECK(at.at(0)[3] - at.at(0)[2] == kInnerSteps / 2);  // the slowed one: what fits, as a slow GPU

  const std::string lost = run_uneven(
      "uneven-lost", replaced(uneven_yaml("  - {name: diloco, label: timed, inner_steps: 10, round: fastest}\n"
                                          "  - {name: async_diloco, inner_steps: 10}\n"),
                              "policies:\n", "world:\n  events:\n    - {host: s-1, at: 0.3 s, state: off}\npolicies:\n"));
  for (const char* policy : {"timed", "async_diloco"}) {
    CAPTURE(policy);
    const std::string json = read_file(lost + policy + "/summary.json");
    std::smatch m;
    REQUIRE(std::regex_search(json, m, std::regex("\"final_eval_loss\": ([0-9.e+-]+)")));
    CHECK(std::isfinite(std::stod(m[1])));
    CHECK(json.find("\"workers_lost\": 1") != std::string::npos);
  }
}
