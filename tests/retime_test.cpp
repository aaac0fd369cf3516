// Re-timed sweep points (cli/run.hpp): runs that differ only in what times them (links, accelerators,
// the network model, slowdowns, the timing scale) train once; the others run their schedule only and
// take that training's losses. Their files must be a full rerun's, byte for byte, and nothing that
// changes the numbers (or a policy that reads the clock, or a world that fails) may be re-timed.
#include <filesystem>
#include <map>
#include <set>

#include "report/recorder_csv.hpp"
#include "cli/run.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

// The CLI tests' small scenario (2 workers: fast, slow; ddp and diloco H=4; 12 steps) with `replace`
// applied (pairs of from, to) and `extra` appended, in a fresh folder with its corpus; returns the file.
std::string scenario(const std::string& name, const std::string& extra,
                     const std::vector<std::pair<std::string, std::string>>& replace = {}) {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 30000);
  std::string yaml = small_scenario_yaml();
  for (const auto& [from, to] : replace) yaml = replaced(yaml, from, to);
  write_file(dir + "/s.yaml", yaml + extra);
  return dir + "/s.yaml";
}

// "point/label" -> the name of the run it is re-timed from ("" when it trains).
std::map<std::string, std::string> plan_of(const std::string& path, RunOptions options = {}) {
  options.output_root = (fs::path(path).parent_path() / "runs").string();
  std::map<std::string, std::string> out;
  for (const PlannedRun& run : plan_runs(load_sweep(path), options)) {
    out[run.name] = run.retime_from ? run.retime_from->name : "";
  }
  return out;
}

size_t trained(const std::map<std::string, std::string>& plan) {
  size_t n = 0;
  for (const auto& [name, from] : plan) n += from.empty();
  return n;
}

// Every file under `a` is the file of the same name under `b`, byte for byte, and no file is missing.
void check_same_files(const fs::path& a, const fs::path& b) {
  const auto mine = files_under(a), theirs = files_under(b);
  REQUIRE(mine.size() == theirs.size());
  for (const auto& [file, bytes] : theirs) {
    CAPTURE(file);
    REQUIRE(mine.count(file) == 1);
    CHECK(mine.at(file) == bytes);
  }
}

const char* kGrid =
    "sweep:\n"
    "  platform.hosts[*].uplink.bandwidth: [2 Mbps, 20 Mbps, 200 Mbps]\n"
    "  policies[diloco].inner_steps: [2, 4]\n";

}  // namespace

TEST_CASE("re-timing: a sweep over uplinks and inner steps trains 3 of its 12 runs, and every file equals a full rerun's") {
  // A straggler only slows a host: it times the runs, and they may still be re-timed.
  const std::string path =
      scenario("retime-grid", std::string("world: {events: [{host: slow, at: 0.5 s, until: 2 s, speed: 0.25}]}\n") + kGrid);
  const auto plan = plan_of(path);
  REQUIRE(plan.size() == 12);
  CHECK(trained(plan) == 3);  // ddp once (it does not depend on inner_steps), diloco once per H
  CHECK(plan.at("bandwidth=2Mbps+inner_steps=2/ddp").empty());
  CHECK(plan.at("bandwidth=2Mbps+inner_steps=2/diloco").empty());
  CHECK(plan.at("bandwidth=2Mbps+inner_steps=4/diloco").empty());
  CHECK(plan.at("bandwidth=200Mbps+inner_steps=4/ddp") == "bandwidth=2Mbps+inner_steps=2/ddp");
  CHECK(plan.at("bandwidth=20Mbps+inner_steps=4/diloco") == "bandwidth=2Mbps+inner_steps=4/diloco");
  CHECK(plan.at("bandwidth=200Mbps+inner_steps=2/diloco") == "bandwidth=2Mbps+inner_steps=2/diloco");

  RunOptions retimed, retrained;
  retimed.output_root = (fs::path(path).parent_path() / "retimed").string();
  retrained.output_root = (fs::path(path).parent_path() / "retrained").string();
  retrained.retime = false;
  retimed.jobs = retrained.jobs = 2;
  const Sweep sweep = load_sweep(path);
  const Merged merged = run_sweep(sweep, retimed);
  REQUIRE(merged.missing.empty());
  run_sweep(sweep, retrained);

  CHECK(files_under(retimed.output_root).size() >= 12 * 8);  // 8 files a run, and the summaries
  check_same_files(retimed.output_root, retrained.output_root);
  // Re-timed runs are timed anew, not copied: less bandwidth, a longer run; the same losses.
  const RunSummary& slow_ddp = merged.tables.front().at(0);
  const RunSummary& fast_ddp = merged.tables.back().at(0);
  CHECK(slow_ddp.wall_clock_s > 2 * fast_ddp.wall_clock_s);
  CHECK(slow_ddp.final_eval_loss == fast_ddp.final_eval_loss);
  CHECK(slow_ddp.params_fingerprint == fast_ddp.params_fingerprint);
  CHECK(!slow_ddp.params_fingerprint.empty());
}

TEST_CASE("re-timing: never across what changes the numbers, for a policy that reads the clock, or on a world that fails") {
  const auto retimed_labels = [](const std::map<std::string, std::string>& plan) {
    std::set<std::string> labels;
    for (const auto& [name, from] : plan) {
      if (!from.empty()) labels.insert(name.substr(name.rfind('/') + 1));
    }
    return labels;
  };
  using Labels = std::set<std::string>;
  // What trains other numbers: every run trains.
  CHECK(trained(plan_of(scenario("retime-steps", "sweep:\n  train.steps: [8, 12]\n"))) == 4);
  CHECK(trained(plan_of(scenario("retime-seed", "sweep:\n  seed: [1, 2]\n"))) == 4);
  CHECK(trained(plan_of(scenario("retime-lr", "sweep:\n  train.optimizer.lr: [1.0e-3, 3.0e-3]\n"))) == 4);
  CHECK(trained(plan_of(scenario("retime-workers", "sweep:\n  platform.hosts[0].count: [1, 2]\n"))) == 4);
  // A key of one policy: the other one is re-timed.
  CHECK(retimed_labels(plan_of(scenario("retime-wire", "sweep:\n  policies[diloco].wire: [fp32, fp16]\n"))) ==
        Labels{"ddp"});
  // What only times the run: re-timed.
  for (const char* grid : {"sweep:\n  timing.params: [1.0e6, 5.0e6]\n", "sweep:\n  network.flows: [exact, aggregated]\n",
                           "sweep:\n  platform.accelerators.gpu.peak: [10 TFLOPS, 100 TFLOPS]\n",
                           "sweep:\n  platform.hosts[1].downlink.latency: [5 ms, 80 ms]\n",
                           "sweep:\n  report.trace: [messages, none]\n", "sweep:\n  train.target_loss: [3.5, 4.5]\n"}) {
    CAPTURE(grid);
    CHECK(retimed_labels(plan_of(scenario("retime-timing", grid))) == Labels{"ddp", "diloco"});
  }
  const std::string bandwidths = "sweep:\n  platform.hosts[*].uplink.bandwidth: [5 Mbps, 50 Mbps]\n";
  // Policies that read the clock: timed rounds, asynchronous DiLoCo.
  CHECK(retimed_labels(plan_of(scenario("retime-clock", bandwidths,
                                        {{"{name: diloco, inner_steps: 4}",
                                          "{name: diloco, inner_steps: 4, round: fastest}\n  - {name: async_diloco, inner_steps: 4}"}}))) ==
        Labels{"ddp"});
  // A world where a host goes off: who is in each sync depends on time.
  CHECK(trained(plan_of(scenario("retime-fails", "world: {events: [{host: slow, at: 1 s, until: 2 s, state: off}]}\n" +
                                                     bandwidths))) == 4);
  // numerics: none trains nothing; --retrain trains everything.
  CHECK(trained(plan_of(scenario("retime-none", "numerics: none\n" + bandwidths))) == 4);
  RunOptions retrain;
  retrain.retime = false;
  CHECK(trained(plan_of(scenario("retime-off", bandwidths), retrain)) == 4);
  // Within a shard's part, as within a whole plan.
  RunOptions half;
  half.shard = {1, 2};  // the diloco runs
  const auto shard = plan_of(scenario("retime-shard", bandwidths), half);
  REQUIRE(shard.size() == 2);
  CHECK(shard.at("bandwidth=50Mbps/diloco") == "bandwidth=5Mbps/diloco");
}

TEST_CASE("re-timing: a shard re-times from what another shard trained before it, and the parts are a whole run's files") {
  // Positions: 0 5Mbps/ddp, 1 5Mbps/diloco, 2 50Mbps/ddp, 3 50Mbps/diloco; three shards.
  const std::string path = scenario("retime-shards", "sweep:\n  platform.hosts[*].uplink.bandwidth: [5 Mbps, 50 Mbps]\n");
  const Sweep sweep = load_sweep(path);
  RunOptions part;
  part.output_root = (fs::path(path).parent_path() / "sharded").string();
  part.jobs = 2;
  const auto plan_of_shard = [&](int index) {
    part.shard = {index, 3};
    return plan_runs(sweep, part);
  };
  // Shard 0 holds 5Mbps/ddp and 50Mbps/diloco: both train (5Mbps/diloco is shard 1's, not run yet).
  std::vector<PlannedRun> zero = plan_of_shard(0);
  REQUIRE(zero.size() == 2);
  CHECK(!zero[0].retime_from);
  CHECK(!zero[1].retime_from);
  run_planned(zero, part);
  // Shard 2's 50Mbps/ddp is re-timed from shard 0's 5Mbps/ddp, now finished; shard 1's run trains.
  std::vector<PlannedRun> two = plan_of_shard(2);
  REQUIRE(two.size() == 1);
  REQUIRE(two[0].retime_from);
  CHECK(two[0].retime_from->name == "bandwidth=5Mbps/ddp");
  run_planned(two, part);
  std::vector<PlannedRun> one = plan_of_shard(1);
  REQUIRE(one.size() == 1);
  CHECK(!one[0].retime_from);
  run_planned(one, part);
  part.shard = {0, 1};
  REQUIRE(merge_runs(sweep, part).missing.empty());

  RunOptions whole;
  whole.output_root = (fs::path(path).parent_path() / "whole").string();
  whole.retime = false;
  run_sweep(sweep, whole);
  check_same_files(part.output_root, whole.output_root);
}

TEST_CASE("re-timing: a reference run that lost its exact losses is computed again, and the others re-timed from it") {
  const std::string path = scenario("retime-old", "sweep:\n  platform.hosts[*].uplink.bandwidth: [5 Mbps, 50 Mbps]\n");
  const std::string dir = fs::path(path).parent_path().string();
  const CliResult first = run_locosim("run s.yaml --policy diloco -o runs", dir);
  REQUIRE_MESSAGE(first.exit_code == 0, first.err);
  CHECK(first.out.find("1 of 2 runs train what an earlier run of theirs trains") != std::string::npos);
  CHECK(first.out.find("bandwidth=50Mbps/diloco simulated in") != std::string::npos);
  CHECK(first.out.find("(re-timed from bandwidth=5Mbps/diloco)") != std::string::npos);
  const fs::path root = fs::path(dir) / "runs" / "small";
  const auto before = files_under(root / "bandwidth=50Mbps");
  CHECK(before.count("diloco/exact_losses.csv") == 1);
  CHECK(before.count("diloco/resolved.yaml") == 1);

  // A finished folder is trusted only with every file it was finished with (report/resume.hpp).
  fs::remove(root / "bandwidth=5Mbps" / "diloco" / kExactLossesFile);
  fs::remove_all(root / "bandwidth=50Mbps" / "diloco");
  const CliResult again = run_locosim("run s.yaml --policy diloco -o runs", dir);
  REQUIRE_MESSAGE(again.exit_code == 0, again.err);
  CHECK(again.out.find("bandwidth=5Mbps/diloco finished earlier, but exact_losses.csv is missing: computed again") !=
        std::string::npos);
  CHECK(again.out.find("bandwidth=50Mbps/diloco simulated in") != std::string::npos);
  CHECK(again.out.find("(re-timed from bandwidth=5Mbps/diloco)") != std::string::npos);
  CHECK(files_under(root / "bandwidth=50Mbps") == before);
}
