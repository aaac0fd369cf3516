// The real backend's subgroup collectives against the simulator's: NoLoCo's random pairs on 4 ranks
// (two pairs a round, a new draw every round) give the simulator's losses and final parameters.
#include <filesystem>
#include <sstream>

#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

// The small scenario on 4 hosts, with NoLoCo syncing every 2 steps: 6 rounds of pairs in 12 steps.
std::string four_rank_scenario() {
  std::string yaml = small_scenario_yaml();
  const std::string hosts = "  hosts:\n";
  yaml.replace(yaml.find(hosts), hosts.size(),
               hosts + "    - {name: more, accelerator: gpu, count: 2, uplink: {bandwidth: 20 Mbps, latency: 15 ms}, "
                       "downlink: {bandwidth: 200 Mbps, latency: 15 ms}}\n");
  return yaml.substr(0, yaml.find("policies:")) + "policies:\n  - {name: noloco, inner_steps: 2, seed: 5}\n";
}

}  // namespace

TEST_CASE("real: NoLoCo's pairs on 4 ranks (subgroup all-reduces) give the simulator's losses and final parameters") {
  const std::string dir = scratch_dir("subgroups");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", four_rank_scenario());
  CliResult sim_run = run_locosim("run s.yaml -o sim", dir);
  CAPTURE(sim_run.err);
  REQUIRE(sim_run.exit_code == 0);
  CliResult r = run_locosim("s.yaml --policy noloco --spawn 4 -o real --timeout 60", dir, "locosim-real");
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string sim = dir + "/sim/small/noloco", real = dir + "/real/small/noloco";
  // Rank 0's numbers after 6 draws of pairs: each round's partner's weights went into them.
  CHECK(without_times(read_file(real + "/metrics.csv")) == without_times(read_file(sim + "/metrics.csv")));
  CHECK(read_file(real + "/exact_losses.csv") == read_file(sim + "/exact_losses.csv"));
  std::string print = read_file(sim + "/summary.json");
  print = print.substr(print.find("params_fingerprint"), 40);
  CHECK(read_file(real + "/summary.json").find(print) != std::string::npos);
  fs::remove_all(dir);
}
