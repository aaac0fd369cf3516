// Sweeps: a scenario's `sweep:` grid expands into validated points (errors name the sweep key and
// point), and a grid runs into runs/<scenario>/<point>/<policy>/ with one summary.csv for the grid.
#include "cli/sweep.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "algorithms/ddp.hpp"
#include "algorithms/diloco.hpp"
#include "config/error.hpp"
#include "cli/report.hpp"
#include "cli/run.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"
#include "tests/tiny_run.hpp"

using namespace locosim;
using testing::read_file;
namespace fs = std::filesystem;

namespace {

// The tiny scenario (9 lines) with `sweep` appended from line 10 on; returns the file's path.
ConfigError sweep_error(const std::string& name, const std::string& sweep) {
  const std::string path = testing::tiny_scenario_file(name, sweep);
  try {
    load_sweep(path);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("load_sweep accepted: " << sweep);
  throw std::logic_error("unreachable");
}

const DiLoCoConfig& diloco(const Scenario& s) { return std::any_cast<const DiLoCoConfig&>(s.policies.at(1).config); }

}  // namespace

TEST_CASE("sweep: uplink bandwidth x inner steps expands into 6 points, first key slowest") {
  const std::string path = testing::tiny_scenario_file("sweep-grid",
                                         "sweep:\n"
                                         "  platform.hosts[*].uplink.bandwidth: [10 Mbps, 100 Mbps, 1000 Mbps]\n"
                                         "  policies[diloco].inner_steps: [2, 8]\n");
  const Sweep sweep = load_sweep(path);
  REQUIRE(sweep.keys == std::vector<std::string>{"platform.hosts[*].uplink.bandwidth", "policies[diloco].inner_steps"});
  REQUIRE(sweep.points.size() == 6);
  CHECK(sweep.points[0].name == "bandwidth=10Mbps+inner_steps=2");
  CHECK(sweep.points[1].name == "bandwidth=10Mbps+inner_steps=8");
  CHECK(sweep.points[5].name == "bandwidth=1000Mbps+inner_steps=8");
  const double uplinks_bps[] = {10e6, 10e6, 100e6, 100e6, 1000e6, 1000e6};
  for (size_t i = 0; i < 6; ++i) {
    const SweepPoint& p = sweep.points[i];
    CAPTURE(p.name);
    REQUIRE(p.scenario.platform.hosts.size() == 3);  // the platform file was read in, count: 2 expanded
    for (const auto& h : p.scenario.platform.hosts) CHECK(h.uplink.bandwidth_bps == doctest::Approx(uplinks_bps[i]));
    CHECK(p.scenario.platform.hosts[0].downlink.bandwidth_bps == doctest::Approx(200e6));  // untouched
    CHECK(p.scenario.platform.hosts[2].downlink.bandwidth_bps == doctest::Approx(500e6));
    CHECK(diloco(p.scenario).inner_steps == (i % 2 == 0 ? 2 : 8));
    CHECK(p.scenario.name == "tiny");
    CHECK(p.values.at(0).first == "platform.hosts[*].uplink.bandwidth");
  }
  CHECK(sweep.points[3].values.at(1).second == "8");
  CHECK(sweep.points[3].scenario.resolved_yaml.find("100 Mbps") != std::string::npos);
}

TEST_CASE("sweep: index selectors, bare policy names and missing mappings on the way") {
  const std::string path = testing::tiny_scenario_file("sweep-keys", "");
  const Scenario s = load_scenario_text(
      apply_sweep_values(path, {{"policies[0].wire", "fp16"}, {"platform.hosts[1].downlink.latency", "40 ms"},
                                {"timing.tokens_per_step", "1024"}, {"runtime.threads", "2"}}),
      path);
  CHECK(std::any_cast<const DdpConfig&>(s.policies.at(0).config).wire == WireFormat::fp16);  // "- ddp" became {name: ddp, wire: fp16}
  // hosts[1] is the file's second entry, "uni": the third host once "home" (count 2) is expanded.
  CHECK(s.platform.hosts.at(2).downlink.latency_s == doctest::Approx(0.040));
  CHECK(s.platform.hosts.at(1).downlink.latency_s == doctest::Approx(0.010));
  CHECK(*s.timing.tokens_per_step == 1024);
  CHECK(s.threads == 2);  // `runtime:` was absent: created
}

TEST_CASE("sweep: a scenario without a sweep is a single unnamed point") {
  const Sweep sweep = load_sweep(testing::tiny_scenario_file("sweep-none", ""));
  CHECK(sweep.keys.empty());
  REQUIRE(sweep.points.size() == 1);
  CHECK(sweep.points[0].name.empty());
  CHECK(sweep.points[0].scenario.policies.size() == 2);
}

TEST_CASE("sweep: errors name the sweep key, its position and the point, before anything runs") {
  ConfigError unknown_policy = sweep_error("sweep-err1", "sweep:\n  policies[nope].inner_steps: [2]\n");
  CHECK(unknown_policy.key() == "sweep.policies[nope].inner_steps");
  CHECK(unknown_policy.line() == 11);
  CHECK(std::string(unknown_policy.what()).find("no item of 'policies' is labelled (or named) 'nope'") != std::string::npos);

  // The second value is misspelled: the whole grid is rejected at that value.
  ConfigError bad_value = sweep_error("sweep-err2", "sweep:\n  platform.hosts[*].uplink.bandwidth: [10 Mbps, 10 Mbsp]\n");
  CHECK(bad_value.key() == "sweep.platform.hosts[*].uplink.bandwidth");
  CHECK(bad_value.line() == 11);
  CHECK(bad_value.column() == 49);
  const std::string message = bad_value.what();
  CHECK(message.find("value '10 Mbsp' at point bandwidth=10Mbsp") != std::string::npos);
  CHECK(message.find("platform.hosts[0].uplink.bandwidth") != std::string::npos);  // the scenario's own complaint

  ConfigError misspelled = sweep_error("sweep-err3", "sweep:\n  policies[diloco].inner_stpes: [2]\n");
  CHECK(misspelled.key() == "sweep.policies[diloco].inner_stpes");
  CHECK(std::string(misspelled.what()).find("did you mean 'inner_steps'") != std::string::npos);

  ConfigError blamed = sweep_error("sweep-err4", "sweep:\n  train.steps: [4]\n  policies[diloco].outer_lr: [0.7, -1]\n");
  CHECK(blamed.key() == "sweep.policies[diloco].outer_lr");  // the axis whose key ends like the rejected one
  CHECK(blamed.line() == 12);

  CHECK(sweep_error("sweep-err5", "sweep:\n  train..steps: [4]\n").key() == "sweep.train..steps");
  CHECK(std::string(sweep_error("sweep-err6", "sweep:\n  train.steps: 4\n").what()).find("non-empty list") !=
        std::string::npos);
  CHECK(std::string(sweep_error("sweep-err7", "sweep:\n  train.steps: [4, 4]\n").what()).find("listed twice") !=
        std::string::npos);
  CHECK(sweep_error("sweep-err8", "sweep: [train.steps]\n").key() == "sweep");  // load_scenario: not a mapping
}

TEST_CASE("sweep: a 2-point grid runs into point folders with one summary.csv, and report reads it back") {
  const std::string path = testing::tiny_scenario_file("sweep-run", "sweep:\n  platform.hosts[*].uplink.bandwidth: [2 Mbps, 200 Mbps]\n");
  const Sweep sweep = load_sweep(path);
  RunOptions options;
  options.output_root = fs::path(path).parent_path() / "runs";
  options.only_labels = {"diloco"};
  options.jobs = 2;
  const auto tables = run_sweep(sweep, options).tables;
  REQUIRE(tables.size() == 2);
  REQUIRE(tables[0].size() == 1);
  // More bandwidth, less time waiting on the all-reduce: higher compute utilization.
  CHECK(tables[0][0].wall_clock_s > tables[1][0].wall_clock_s);
  CHECK(tables[0][0].compute_utilization < tables[1][0].compute_utilization);

  const fs::path root = fs::path(options.output_root) / "tiny";
  for (const char* point : {"bandwidth=2Mbps", "bandwidth=200Mbps"}) {
    CAPTURE(point);
    for (const char* file : {"metrics.csv", "events.csv", "links.csv", "trace.json", "summary.json", "resolved.yaml"}) {
      CHECK(fs::exists(root / point / "diloco" / file));
    }
    CHECK(fs::exists(root / point / "summary.csv"));
  }
  std::istringstream grid(read_file(root / "summary.csv"));
  std::string header, row1, row2, extra;
  std::getline(grid, header);
  std::getline(grid, row1);
  std::getline(grid, row2);
  CHECK(header.rfind("point,platform.hosts[*].uplink.bandwidth,label,policy,workers,", 0) == 0);
  CHECK(row1.rfind("bandwidth=2Mbps,2 Mbps,diloco,diloco,3,", 0) == 0);
  CHECK(row2.rfind("bandwidth=200Mbps,200 Mbps,diloco,diloco,3,", 0) == 0);
  CHECK(!std::getline(grid, extra));

  const std::string report = report_run_folder(root.string());
  CHECK(report.find("point bandwidth=2Mbps\n") != std::string::npos);
  CHECK(report.find("point bandwidth=200Mbps\n") != std::string::npos);
  CHECK(report_run_folder((root / "bandwidth=2Mbps").string()).find("diloco") != std::string::npos);
  CHECK(report_run_folder((root / "bandwidth=2Mbps" / "diloco").string()).find("wall-clock") != std::string::npos);
  CHECK_THROWS_AS(report_run_folder((root / "nowhere").string()), std::invalid_argument);
}

TEST_CASE("sweep: a list index too large for any list, or a folder name too long, is a ConfigError") {
  // Regressions found by the fuzzer: std::stoul threw std::out_of_range ("locosim: stoul", exit 1).
  ConfigError huge = sweep_error("sweep-huge-index", "sweep:\n  platform.hosts[99999999999999999999].uplink.bandwidth: [10 Mbps]\n");
  CHECK(std::string(huge.what()).find("no [99999999999999999999]") != std::string::npos);
  ConfigError long_name =
      sweep_error("sweep-long-name", "sweep:\n  policies[diloco].outer_lr: [0." + std::string(250, '1') + "]\n");
  CHECK(std::string(long_name.what()).find("is longer than 200 characters") != std::string::npos);
}

TEST_CASE("sweep: a point that fails to load names its axis and value") {
  // Regression found by the fuzzer: the blamed axis was read through a reference into a destroyed
  // vector (AddressSanitizer: heap-use-after-free).
  ConfigError e = sweep_error("sweep-bad-point", "sweep:\n  train.steps: [0]\n");
  CHECK(e.key() == "sweep.train.steps");
  CHECK(std::string(e.what()).find("value '0' at point steps=0") != std::string::npos);
}
