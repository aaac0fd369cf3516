// Several training seeds: `seeds:` (or --seeds) makes a point per seed of every grid point; each seed
// trains its own initial weights and batches while the world's churn keeps the scenario's draws; the
// same seeds give the same files, byte for byte; seeds.csv and the table aggregate over them.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "config/error.hpp"
#include "cli/report.hpp"
#include "cli/run.hpp"
#include "cli/sweep.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"
#include "tests/tiny_run.hpp"

using namespace locosim;
using testing::files_under;
using testing::read_file;
namespace fs = std::filesystem;

namespace {

std::string load_error(const std::string& name, const std::string& extra, std::optional<int64_t> seeds = {}) {
  try {
    load_sweep(testing::tiny_scenario_file(name, extra), seeds);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

// The first metric row of worker 0 (step 1): its train loss, as metrics.csv writes it.
std::string first_train_loss(const fs::path& metrics_csv) {
  std::istringstream in(read_file(metrics_csv));
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  return row;
}

}  // namespace

TEST_CASE("seeds: a point per seed of every grid point, the seed fastest, and the world's churn keeps its draws") {
  const std::string churn = "world: {churn: [{hosts: [home-0, home-1], mtbf: 1 h, mttr: 10 min}]}\n";
  const Sweep sweep = load_sweep(testing::tiny_scenario_file("seeds-grid", "seed: 7\nseeds: 3\n" + churn +
                                                                 "sweep:\n  policies[diloco].inner_steps: [2, 4]\n"));
  CHECK(sweep.seeded);
  CHECK(sweep.seeds == std::vector<uint64_t>{7, 8, 9});
  CHECK(sweep.keys == std::vector<std::string>{"policies[diloco].inner_steps", "seed"});
  REQUIRE(sweep.points.size() == 6);
  CHECK(sweep.points[0].name == "inner_steps=2+seed=7");
  CHECK(sweep.points[2].name == "inner_steps=2+seed=9");
  CHECK(sweep.points[3].name == "inner_steps=4+seed=7");
  CHECK(sweep.points[4].group == "inner_steps=4");
  CHECK(sweep.points[4].seed == 8);
  CHECK(sweep.points[4].values.back() == std::pair<std::string, std::string>("seed", "8"));
  const uint64_t churn_seed_of_7 = sweep.points[0].scenario.world.churn.at(0).seed;
  for (const SweepPoint& p : sweep.points) {
    CAPTURE(p.name);
    CHECK(p.scenario.seed == p.seed);
    CHECK(p.scenario.world.churn.at(0).seed == churn_seed_of_7);  // seed 7's draws at every seed
    CHECK(p.scenario.resolved_yaml.find("\nseed: " + std::to_string(p.seed) + "\n") != std::string::npos);
    CHECK(p.scenario.resolved_yaml.find("seeds") == std::string::npos);  // adding seeds keeps the others' runs
  }

  // A list, and --seeds N instead of the file's.
  const Sweep listed = load_sweep(testing::tiny_scenario_file("seeds-list", "seeds: [5, 1, 12]\n"));
  CHECK(listed.seeds == std::vector<uint64_t>{5, 1, 12});
  CHECK(listed.points.at(0).name == "seed=5");
  CHECK(listed.points.at(0).group.empty());
  const Sweep overridden = load_sweep(testing::tiny_scenario_file("seeds-cli", "seeds: [5, 1, 12]\n"), 2);
  CHECK(overridden.seeds == std::vector<uint64_t>{1, 2});
  // One seed, the scenario's: no seed folders, as before seeds existed.
  const Sweep one = load_sweep(testing::tiny_scenario_file("seeds-one", "seeds: 1\n"));
  CHECK_FALSE(one.seeded);
  CHECK(one.points.size() == 1);
  CHECK(one.points[0].name.empty());
  // Timing only: the schedule cannot depend on the training seed, one run stands for them all.
  const Sweep timing = load_sweep(testing::tiny_scenario_file("seeds-timing", "numerics: none\nseeds: 4\n"));
  CHECK_FALSE(timing.seeded);
  CHECK(timing.points.size() == 1);
  CHECK(timing.seeds_not_needed == 4);

  CHECK(load_error("seeds-zero", "seeds: 0\n").find("seeds: must be in [1, 100], got 0") != std::string::npos);
  CHECK(load_error("seeds-many", "seeds: 101\n").find("seeds: must be in [1, 100]") != std::string::npos);
  CHECK(load_error("seeds-twice", "seeds: [3, 4, 3]\n").find("seeds[2]: value 3 is listed twice") != std::string::npos);
  CHECK(load_error("seeds-word", "seeds: [3, x]\n").find("seeds[1]: must be an integer") != std::string::npos);
  CHECK(load_error("seeds-past", "seed: 18446744073709551615\nseeds: 2\n").find("seed + seeds - 1 is past") !=
        std::string::npos);
  CHECK(load_error("seeds-swept", "seeds: 2\nsweep:\n  seed: [1, 2]\n").find("sweep.seed: the scenario runs at "
                                                                              "several seeds") != std::string::npos);
}

TEST_CASE("seeds: each seed trains its own weights and batches, the same seeds give identical files, seeds.csv "
          "and the table aggregate them") {
  const std::string path = testing::tiny_scenario_file("seeds-run", "seeds: 2\n");
  RunOptions options;
  options.output_root = (fs::path(path).parent_path() / "runs").string();
  options.jobs = 2;
  const Sweep sweep = load_sweep(path);
  const Merged merged = run_sweep(sweep, options);
  const fs::path root = fs::path(options.output_root) / "tiny";
  REQUIRE(merged.tables.size() == 2);
  REQUIRE(merged.tables[0].size() == 2);
  REQUIRE(merged.tables[1].size() == 2);
  for (size_t p = 0; p < 2; ++p) {  // ddp, diloco: other initial weights and batches at seed 2
    CAPTURE(p);
    CHECK(merged.tables[0][p].params_fingerprint != merged.tables[1][p].params_fingerprint);
    CHECK(merged.tables[0][p].final_eval_loss != merged.tables[1][p].final_eval_loss);
    const std::string label = merged.tables[0][p].label;
    CHECK(first_train_loss(root / "seed=1" / label / "metrics.csv") !=
          first_train_loss(root / "seed=2" / label / "metrics.csv"));
  }
  // summary.csv: the per-seed rows, with a seed column; seeds.csv: the aggregate.
  const std::string grid = read_file(root / "summary.csv");
  CHECK(grid.rfind("point,seed,label,policy,", 0) == 0);
  CHECK(grid.find("\nseed=2,2,diloco,diloco,3,") != std::string::npos);
  const std::string seeds = read_file(root / "seeds.csv");
  CHECK(seeds.rfind("label,policy,seeds,wall_clock_s_mean,", 0) == 0);
  CHECK(seeds.find("\nddp,ddp,2,") != std::string::npos);
  CHECK(seeds.find("\ndiloco,diloco,2,") != std::string::npos);
  REQUIRE(merged.seed_groups.size() == 1);
  REQUIRE(merged.seed_groups[0].rows.size() == 2);
  const SeedSummary& ddp = merged.seed_groups[0].rows[0];
  CHECK(ddp.final_eval_loss.n == 2);
  CHECK(ddp.final_eval_loss.mean ==
        doctest::Approx((merged.tables[0][0].final_eval_loss + merged.tables[1][0].final_eval_loss) / 2));
  CHECK(format_seed_table(merged.seed_groups[0].rows).find("2 seeds (1, 2): mean ± half-width") != std::string::npos);
  // `locosim report` reads the same table back from the folders.
  CHECK(report_run_folder(root.string()) == format_seed_table(merged.seed_groups[0].rows));

  // The same scenario and seeds again, elsewhere: every file byte for byte.
  RunOptions again = options;
  again.output_root = (fs::path(path).parent_path() / "again").string();
  run_sweep(load_sweep(path), again);
  const auto first = files_under(root), second = files_under(fs::path(again.output_root) / "tiny");
  CHECK(first.size() > 20);
  CHECK(first.size() == second.size());
  for (const auto& [name, bytes] : first) {
    CAPTURE(name);
    REQUIRE(second.count(name));
    CHECK(second.at(name) == bytes);
  }
  fs::remove_all(fs::path(path).parent_path());
}
