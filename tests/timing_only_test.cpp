// Timing-only runs (numerics: none) against full runs of the same scenario: every policy's schedule
// does not depend on the numbers, so events, link traffic, wall-clock, bytes and utilization must be
// equal to the last byte; the timing-only run says it has no loss (summary.json, metrics.csv, the
// table), and the real backend refuses it.
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"
#include "tests/registered_policies.hpp"

using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

// timing-small's platform and training with every registered policy (its registry example) and DiLoCo
// with timed rounds, by label.
const std::string kTimed = "  - {name: diloco, label: diloco_timed, inner_steps: 4, round: fastest}\n";
std::vector<std::string> labels() {
  std::vector<std::string> out = registered_policy_names();
  out.push_back("diloco_timed");
  return out;
}

// Runs the scenario twice in one scratch folder, full and timing-only (same name: the two runs' folders
// sit under runs/full and runs/none). Returns the folder.
std::string run_both(const std::string& name, const std::string& scenario_file, const std::string& policies = "") {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 60000);
  std::string scenario = portable_scenario(read_file(scenario_file));
  if (!policies.empty()) scenario = with_policies(scenario, policies);
  write_file(dir + "/full.yaml", scenario);
  write_file(dir + "/none.yaml", replaced(scenario, "\nseed:", "\nnumerics: none\nseed:"));
  for (const char* mode : {"full", "none"}) {
    CliResult r = run_locosim(std::string("run ") + mode + ".yaml -o runs/" + mode, dir);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    if (std::string(mode) == "none") {
      CHECK(r.out.find("no loss") != std::string::npos);
      CHECK(r.out.find("timing only (numerics: none)") != std::string::npos);
    } else {
      CHECK(r.out.find("no loss") == std::string::npos);
    }
  }
  return dir;
}

std::string run_folder(const std::string& dir, const std::string& mode, const std::string& scenario,
                       const std::string& label) {
  return dir + "/runs/" + mode + "/" + scenario + "/" + label;
}

// metrics.csv without its loss columns (time, worker, step, tokens, then sync).
std::string metrics_without_losses(const std::string& path) {
  return std::regex_replace(read_file(path), std::regex("^([^,]*,[^,]*,[^,]*,[^,]*),[^,]*,[^,]*,", std::regex::multiline),
                            "$1,");
}

void check_equal_timing(const std::string& full, const std::string& none) {
  CHECK(read_file(full + "/events.csv") == read_file(none + "/events.csv"));
  CHECK(read_file(full + "/links.csv") == read_file(none + "/links.csv"));
  CHECK(metrics_without_losses(full + "/metrics.csv") == metrics_without_losses(none + "/metrics.csv"));
  if (fs::exists(full + "/updates.csv")) CHECK(read_file(full + "/updates.csv") == read_file(none + "/updates.csv"));
  const std::string a = read_file(full + "/summary.json"), b = read_file(none + "/summary.json");
  for (const char* key : {"wall_clock_s", "compute_utilization", "utilization_min", "utilization_max",
                          "sent_bytes_per_worker", "recv_bytes_per_worker", "steps", "tokens", "syncs_committed",
                          "syncs_aborted", "compute_wasted_s", "workers_lost", "workers_joined"}) {
    CAPTURE(key);
    CHECK(json_value(a, key) == json_value(b, key));
  }
  CHECK(json_value(a, "numerics") == "\"full\"");
  CHECK(json_value(b, "numerics") == "\"none\"");
  CHECK(json_value(a, "final_eval_loss") != "null");
  CHECK(json_value(b, "final_eval_loss") == "null");
  CHECK(json_value(b, "final_train_loss") == "null");
  // No loss anywhere in the timing-only metrics: every row's train and eval cells are empty.
  const std::string rows = std::regex_replace(read_file(none + "/metrics.csv"), std::regex("^[^\n]*\n"), "",
                                              std::regex_constants::format_first_only);
  CHECK(!std::regex_search(rows, std::regex("^[^,]*,[^,]*,[^,]*,[^,]*,[^,]", std::regex::multiline)));
}

}  // namespace

TEST_CASE("timing only: every policy's events, links, times, bytes and utilization equal the full run's") {
  const std::string dir = run_both("timing-only", "scenarios/tests/timing-small.yaml", registered_policies_block() + kTimed);
  for (const std::string& label : labels()) {
    CAPTURE(label);
    check_equal_timing(run_folder(dir, "full", "timing-small", label), run_folder(dir, "none", "timing-small", label));
  }
}

TEST_CASE("timing only: on a changing world (a straggler, a host lost and back, churn) the runs still agree") {
  const std::string dir = run_both("timing-only-world", "scenarios/tests/world-small.yaml");
  for (const std::string label : {"ddp", "diloco"}) {
    CAPTURE(label);
    const std::string full = run_folder(dir, "full", "world-small", label);
    check_equal_timing(full, run_folder(dir, "none", "world-small", label));
    CHECK(read_file(full + "/events.csv").find(",join,") != std::string::npos);  // the case is exercised
  }
}

TEST_CASE("timing only: the real backend refuses numerics: none at its line") {
  const std::string dir = scratch_dir("timing-only-real");
  write_corpus(dir + "/corpus.txt", 60000);
  write_file(dir + "/s.yaml", "numerics: none\n" + small_scenario_yaml());
  CliResult r = run_locosim("s.yaml --spawn 2", dir, "locosim-real");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("s.yaml:1:") != std::string::npos);
  CHECK(r.err.find("numerics") != std::string::npos);
  CHECK(!fs::exists(dir + "/runs"));
}
