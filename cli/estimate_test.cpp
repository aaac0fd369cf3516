// The run estimate: close to what a measured large run cost, and a run that does not fit is refused
// with its figures before anything is written (regression: a 2-step run on a 1024-host platform took
// 104 s, 13.7 GB and wrote 1.4 GB without a word).
#include "cli/estimate.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/doctest_torch.hpp"

using namespace locosim;
namespace fs = std::filesystem;

namespace {

// A scenario of `hosts` identical workers, the tiny model, `steps` steps of `policy`.
Scenario scenario_of(int hosts, int steps, const std::string& policy) {
  const fs::path dir = fs::temp_directory_path() / ("locosim-estimate-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "corpus.txt") << std::string(400000, 'a');
  const std::string yaml = "platform:\n  accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.4}}\n  hosts:\n"
                           "    - {name: h, accelerator: gpu, count: " + std::to_string(hosts) +
                           ", uplink: {bandwidth: 100 Mbps, latency: 10 ms}, downlink: {bandwidth: 1 Gbps, latency: 10 ms}}\n"
                           "data: {path: corpus.txt}\nmodel: {preset: tiny, seq_len: 16}\n"
                           "train: {steps: " + std::to_string(steps) + ", batch_size: 1}\npolicies: [" + policy + "]\n";
  return load_scenario_text(yaml, (dir / "s.yaml").string());
}

// An estimate within 2x of what the run measured, either way.
void check_within_2x(double estimated, double measured) {
  CAPTURE(estimated);
  CHECK(estimated > measured / 2);
  CHECK(estimated < measured * 2);
}

}  // namespace

TEST_CASE("estimate: the 1024-host, 2-step DDP run is priced near what it measured (3.5 GB, 1.47 GB, 62 s)") {
  // With its trace (report.trace: messages), which is streamed: priced as a JSON tree held in memory,
  // 1.5 kB a span, this run came to 18.6 GB, and a 16 GB machine would have refused it.
  const Scenario s = scenario_of(1024, 2, "ddp");
  REQUIRE(s.trace == "messages");
  const RunEstimate e = estimate_policy_run(s, s.policies[0]);
  check_within_2x(e.memory_bytes, 3.5e9);
  check_within_2x(e.disk_bytes, 1.47e9);
  check_within_2x(e.seconds, 62.0);
}

TEST_CASE("estimate: a timing-only swarm without a trace is priced near what it measured (1.43 GB, 689 MB, 45 s)") {
  // scenarios/swarm-10k.yaml at 100 rounds (train.steps: 500), report.trace: none. Its rows priced as if
  // each had a trace span came to 22.7 GB and 2.9 GB: a 16 GB machine would have refused it.
  Scenario s = load_scenario("scenarios/swarm-10k.yaml");
  s.train.steps = 500;
  REQUIRE(s.trace == "none");
  const RunEstimate e = estimate_policy_run(s, s.policies[0]);
  check_within_2x(e.memory_bytes, 1.43e9);
  check_within_2x(e.disk_bytes, 689e6);
  check_within_2x(e.seconds, 45.0);
}

TEST_CASE("estimate: a relay all-reduce is priced at two messages per worker, not a ring's 2(K-1)") {
  // bench/scale.py's relay at 4096 workers x 100 DiLoCo rounds of 5 steps, timing only, no trace:
  // 4.1M rows of events.csv, 700 MB resident, 329 MB written. Priced as an exact ring's flows it needed
  // 400 GB and was refused on a 24 GB machine.
  Scenario s = scenario_of(4096, 500, "{name: diloco, inner_steps: 5}");
  s.timing_only = true;
  s.trace = "none";
  s.platform.relay = s.platform.hosts.front();
  s.platform.relay->name = "relay";
  s.network.all_reduce = AllReduceAlgorithm::relay;
  const RunEstimate relay = estimate_policy_run(s, s.policies[0]);
  check_within_2x(relay.rows, 4.1e6);
  check_within_2x(relay.memory_bytes, 700e6);
  check_within_2x(relay.disk_bytes, 329e6);
  check_within_2x(relay.seconds, 15.0);
  s.network.all_reduce = AllReduceAlgorithm::ring;
  CHECK(estimate_policy_run(s, s.policies[0]).rows > 1000 * relay.rows);
}

TEST_CASE("estimate: DiLoCo's rare syncs cost far fewer rows than DDP's every-step all-reduce") {
  const Scenario ddp = scenario_of(16, 100, "ddp");
  const Scenario diloco = scenario_of(16, 100, "{name: diloco, inner_steps: 50}");
  CHECK(estimate_policy_run(diloco, diloco.policies[0]).rows * 10 < estimate_policy_run(ddp, ddp.policies[0]).rows);
}

TEST_CASE("estimate: a run that does not fit is refused with the figures, unless forced") {
  RunEstimate big;
  big.memory_bytes = 30e9;
  big.disk_bytes = 2e9;
  big.seconds = 4000;
  const MachineRoom room{20e9, 500e9};
  CHECK_THROWS_WITH_AS(check_run_fits({big}, 2, room, false),
                       "this run needs about 30.0 GB of memory (1 simulation at once, the largest 30.0 GB), 2.0 GB on "
                       "disk and 66.7 min of single-core time; the machine has 20.0 GB of memory available. Use fewer "
                       "workers or steps, fewer simulations at once (-j), or --force to try anyway",
                       std::invalid_argument);
  CHECK(check_run_fits({big}, 2, room, true).rfind("warning: --force: this run needs", 0) == 0);

  RunEstimate half = big;
  half.memory_bytes = 12e9;  // one fits, two at once do not
  CHECK_THROWS_AS(check_run_fits({half, half}, 2, room, false), std::invalid_argument);
  CHECK(check_run_fits({half, half}, 1, room, false).rfind("note: this run needs about 12.0 GB", 0) == 0);

  RunEstimate disk = big;
  disk.memory_bytes = 1e9;
  CHECK_THROWS_WITH_AS(check_run_fits({disk}, 1, MachineRoom{20e9, 1e9}, false),
                       doctest::Contains("the output folder's disk has 1.0 GB free"), std::invalid_argument);

  RunEstimate small;
  small.memory_bytes = 0.4e9;
  small.disk_bytes = 2e6;
  small.seconds = 20;
  CHECK(check_run_fits({small, small}, 2, room, false).empty());
}

TEST_CASE("estimate: the shipped scenarios' runs are priced within 2x of what they took on one core") {
  // Measured on one core of a 2-core VM (locosim run FILE -p diloco -j 1 --step-threads 1): the whole
  // process, loading and writing included.
  const std::vector<std::pair<std::string, double>> measured = {
      {"scenarios/quickstart.yaml", 28.8}, {"scenarios/distro-consumer.yaml", 12.5},
      {"scenarios/opendiloco-3-countries.yaml", 40.6}};
  for (const auto& [file, seconds] : measured) {
    CAPTURE(file);
    const Scenario s = load_scenario(file);
    const PolicySpec* diloco = nullptr;
    for (const auto& p : s.policies) diloco = p.label == "diloco" ? &p : diloco;
    REQUIRE(diloco);
    const RunEstimate e = estimate_policy_run(s, *diloco);
    CAPTURE(e.seconds);
    CHECK(e.seconds > seconds / 2);
    CHECK(e.seconds < seconds * 2);
  }
  // Two runs of 10 s and 30 s, two at once: the longer one; one at a time: both.
  std::vector<RunEstimate> runs(2);
  runs[0].seconds = 10, runs[1].seconds = 30;
  CHECK(machine_time_range(runs, 2) == "15 s to 60 s");
  CHECK(machine_time_range(runs, 1) == "20 s to 80 s");
}
