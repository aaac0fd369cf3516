// Tuned comparisons: a policy entry's `tune:` grid runs as a policy per point; every run with a
// validation split scores its final models on it; the comparison takes each entry at the point of
// lowest mean validation loss and reports its losses on the eval (test) split.
#include <filesystem>
#include <fstream>

#include "algorithms/diloco.hpp"
#include "config/error.hpp"
#include "report/tuning.hpp"
#include "cli/run.hpp"
#include "cli/sweep.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"
#include "tests/tiny_run.hpp"

using namespace locosim;
namespace fs = std::filesystem;

namespace {

// The tiny scenario's 3 workers and model, its data with a validation split, and `policies`.
std::string tuned_scenario(const std::string& name, const std::string& policies,
                           const std::string& data = "data: {path: corpus.txt, validation_fraction: 0.1}\n") {
  const std::string dir = testing::tiny_scenario_dir(name);
  testing::write_text(dir + "/scenario.yaml",
                      "name: tiny\n"
                      "platform: platform.yaml\n" +
                          data +
                          "model: {preset: tiny, d_model: 32, n_layers: 1, n_heads: 2, seq_len: 16}\n"
                          "train: {steps: 8, batch_size: 4, eval_every: 4, eval_batches: 1, optimizer: {name: adamw, "
                          "lr: 1.0e-3}}\n"
                          "timing: {params: 5.0e6, tokens_per_step: 16384}\n"
                          "policies:\n" +
                          policies);
  return dir + "/scenario.yaml";
}

std::string load_error(const std::string& path) {
  try {
    load_sweep(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

const std::string kTuned = "  - ddp\n  - {name: diloco, inner_steps: 4, tune: {outer_lr: [0.5, 1.0]}}\n";

}  // namespace

TEST_CASE("tune: an entry's grid runs as a policy per point, labelled by its values, and needs a validation split") {
  const Scenario s = load_sweep(tuned_scenario("tune-grid", kTuned)).points.at(0).scenario;
  REQUIRE(s.policies.size() == 3);
  CHECK(s.policies[0].label == "ddp");
  CHECK(s.policies[0].tuned_from.empty());
  CHECK(s.policies[1].label == "diloco.outer_lr-0.5");
  CHECK(s.policies[2].label == "diloco.outer_lr-1.0");
  CHECK(s.policies[2].tuned_from == "diloco");
  CHECK(s.policies[2].tune_values == std::vector<std::pair<std::string, std::string>>{{"outer_lr", "1.0"}});
  CHECK(std::any_cast<const DiLoCoConfig&>(s.policies[1].config).outer.lr == 0.5);
  CHECK(std::any_cast<const DiLoCoConfig&>(s.policies[2].config).inner_steps == 4);  // the entry's own keys in every point
  // The resolved scenario lists the points as the policies they ran as: each has its own run hash.
  CHECK(s.resolved_yaml.find("tune") == std::string::npos);
  CHECK(s.resolved_yaml.find("label: diloco.outer_lr-0.5") != std::string::npos);
  CHECK(s.data.validation_fraction == 0.1);

  // Two keys: every combination, the first slowest.
  const Scenario two = load_sweep(tuned_scenario("tune-two", "  - {name: diloco, tune: {outer_lr: [0.5, 1.0], "
                                                             "inner_steps: [2, 4]}}\n"))
                           .points.at(0)
                           .scenario;
  REQUIRE(two.policies.size() == 4);
  CHECK(two.policies[1].label == "diloco.outer_lr-0.5.inner_steps-4");

  CHECK(load_error(tuned_scenario("tune-no-validation", kTuned, "data: {path: corpus.txt}\n"))
            .find("policies[1].tune: choosing the best point needs a validation split") != std::string::npos);
  CHECK(load_error(tuned_scenario("tune-both", "  - {name: diloco, inner_steps: 4, tune: {inner_steps: [2, 4]}}\n"))
            .find("policies[0].tune.inner_steps: is also set in the entry") != std::string::npos);
  CHECK(load_error(tuned_scenario("tune-name", "  - {name: diloco, tune: {name: [ddp]}}\n"))
            .find("policies[0].tune.name: cannot be tuned") != std::string::npos);
  CHECK(load_error(tuned_scenario("tune-empty", "  - {name: diloco, tune: {outer_lr: []}}\n"))
            .find("policies[0].tune.outer_lr: must be a non-empty list of values") != std::string::npos);
  // A value the policy refuses: named at its own line and column, under the policy's key.
  const std::string bad = load_error(tuned_scenario("tune-bad", "  - {name: diloco, tune: {outer_lr: [0.5, 99]}}\n"));
  CHECK(bad.find("scenario.yaml:8:43: policies[0].outer_lr: must be in (0, ") != std::string::npos);
}

TEST_CASE("tune: runs score their final models on the validation split, and the comparison takes each entry at "
          "its best validation point") {
  const std::string path = tuned_scenario("tune-run", kTuned + "seeds: 2\n");
  RunOptions options;
  options.output_root = (fs::path(path).parent_path() / "runs").string();
  options.jobs = 2;
  const Sweep sweep = load_sweep(path);
  const Merged merged = run_sweep(sweep, options);
  REQUIRE(merged.seed_groups.size() == 1);
  const auto& per_seed = merged.seed_groups[0].per_seed;
  REQUIRE(per_seed.size() == 2);
  double mean[2] = {0, 0};  // the two points' mean validation loss
  for (const auto& table : per_seed) {
    REQUIRE(table.size() == 3);
    for (const RunSummary& r : table) {
      CAPTURE(r.label);
      REQUIRE(r.final_validation_loss.has_value());
      CHECK(std::isfinite(*r.final_validation_loss));
      CHECK(*r.final_validation_loss != r.final_eval_loss);  // another split
    }
    mean[0] += *table[1].final_validation_loss / 2;
    mean[1] += *table[2].final_validation_loss / 2;
  }
  const std::string best = mean[0] <= mean[1] ? "outer_lr=0.5" : "outer_lr=1.0";
  const std::string text = tuned_comparison(sweep.points.front().scenario, merged.seed_groups[0].seeds, per_seed);
  CAPTURE(text);
  CHECK(text.rfind("\nat their best settings:\n2 seeds (1, 2): mean", 0) == 0);
  CHECK(text.find("\ndiloco  " + best + "  ") != std::string::npos);
  CHECK(text.find("ddp     defaults") != std::string::npos);
  // tuned.csv records the same choice, beside seeds.csv, for notebooks and scripts.
  const std::string csv = testing::read_file((fs::path(options.output_root) / "tiny" / "tuned.csv").string());
  CAPTURE(csv);
  CHECK(csv.rfind("entry,chosen,setting,points,validation_loss_mean,validation_loss_ci95,validation_seeds\n", 0) == 0);
  CHECK(csv.find("\nddp,ddp,defaults,1,") != std::string::npos);
  const std::string chosen = mean[0] <= mean[1] ? "diloco.outer_lr-0.5" : "diloco.outer_lr-1.0";
  CHECK(csv.find("\ndiloco," + chosen + "," + best + ",2,") != std::string::npos);
  CHECK(csv.find(",2\n") != std::string::npos);  // two seeds behind each mean
  // The summaries carry the validation loss; a run without a validation split has none.
  const std::string json = testing::read_file((fs::path(options.output_root) / "tiny" / "seed=1" / "ddp" / "summary.json").string());
  CHECK(json.find("\"final_validation_loss\":") != std::string::npos);
  fs::remove_all(fs::path(path).parent_path());
}
