// What-if without editing YAML: `--set key=value` on run and check (strict as the file, errors naming
// the option, recorded in resolved.yaml so in the run's hash), and `locosim compare` of two runs.
#include <filesystem>
#include <string>

#include "config/error.hpp"
#include "cli/sweep.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

// A scratch folder with the small scenario (s.yaml) and its corpus.
std::string small_dir(const std::string& name) {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  return dir;
}

// What `check s.yaml <args>` prints on stderr; fails the test unless it exits 2.
std::string check_error(const std::string& dir, const std::string& args) {
  const CliResult r = run_locosim("check s.yaml " + args, dir);
  CHECK_MESSAGE(r.exit_code == 2, r.out);
  return r.err;
}

}  // namespace

TEST_CASE("what-if: a bad --set gets the file's message, naming the option where the file's line would be, exit 2") {
  const std::string dir = small_dir("set-errors");
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--set train.stepz=3", "error: --set train.stepz=3: train.stepz: unknown key (known here:"},
      {"--set train.stepz=3", "; did you mean 'steps'?"},
      {"--set train.steps=many", "error: --set train.steps=many: train.steps: must be an integer, got 'many'"},
      {"--set train.steps=0", "error: --set train.steps=0: train.steps: must be in [1, 10000000], got 0"},
      {"--set 'platform.hosts[0].uplink.bandwidth=1 Gbs'",
       "error: --set platform.hosts[0].uplink.bandwidth=1 Gbs: platform.hosts[0].uplink.bandwidth: expected a bandwidth"},
      {"--set 'policies[diloco].inner_steps=0'",
       "error: --set policies[diloco].inner_steps=0: policies[1].inner_steps: must be in [1, 10000000], got 0"},
      {"--set 'policies[nope].inner_steps=2'", "no item of 'policies' is labelled (or named) 'nope'"},
      {"--set 'policies[7].inner_steps=2'", "'policies' has 2 items, no [7]"},
      {"--set policies.diloco.inner_steps=2", "'policies' is a list: pick its items with [i], [label] or [*]"},
      {"--set newsection.x=1", "error: --set newsection.x=1: newsection: unknown key"},
      {"--set train=5", "error: --set train=5: train: must be a mapping of keys, got '5'"},
      {"--set train.steps", "error: --set train.steps: write dotted.key=value"},
      {"--set 'train.steps=[1'", "error: --set train.steps=[1: train.steps: invalid YAML value"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const std::string err = check_error(dir, c.args);
    CHECK_MESSAGE(err.find(c.message) != std::string::npos, err);
  }
  // A value the file would accept passes, and a list item is picked by label, name or index.
  for (const char* good : {"--set train.steps=8", "--set 'policies[diloco].inner_steps=2' --set 'policies[0].label=sync'",
                           "--set 'platform.hosts[*].uplink.bandwidth=1 Gbps'", "--set train.target_loss=3.5"}) {
    CAPTURE(good);
    const CliResult r = run_locosim(std::string("check s.yaml ") + good, dir);
    CHECK_MESSAGE(r.exit_code == 0, r.err);
  }
  // A run refused for its --set writes nothing.
  const CliResult run = run_locosim("run s.yaml -o out --set train.stepz=3", dir);
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("--set train.stepz=3: train.stepz: unknown key") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out"));
  fs::remove_all(dir);
}

TEST_CASE("what-if: --set reaches into a platform file, and may not also set a sweep key") {
  const std::string dir = small_dir("set-platform");
  write_file(dir + "/plat.yaml", "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.4}}\n"
                                 "hosts:\n"
                                 "  - {name: a, accelerator: gpu, uplink: {bandwidth: 50 Mbps, latency: 10 ms}, "
                                 "downlink: {bandwidth: 500 Mbps, latency: 10 ms}}\n"
                                 "  - {name: b, accelerator: gpu, uplink: {bandwidth: 10 Mbps, latency: 20 ms}, "
                                 "downlink: {bandwidth: 100 Mbps, latency: 20 ms}}\n");
  std::string text = small_scenario_yaml();
  text = text.substr(0, text.find("platform:")) + "platform: plat.yaml\n" + text.substr(text.find("data:"));
  write_file(dir + "/s.yaml", text);
  const locosim::Override faster{"platform.hosts[1].uplink.bandwidth", "1 Gbps", "--set platform.hosts[1].uplink.bandwidth=1 Gbps"};
  const locosim::Sweep sweep = locosim::load_sweep(dir + "/s.yaml", std::nullopt, {faster});
  const locosim::Scenario& s = sweep.points.at(0).scenario;
  CHECK(s.platform.hosts.at(1).uplink.bandwidth_bps == doctest::Approx(1e9));
  CHECK(s.platform.hosts.at(0).uplink.bandwidth_bps == doctest::Approx(50e6));
  CHECK(s.resolved_yaml.find("1 Gbps") != std::string::npos);
  // A bad value there names the option and the platform file's key.
  const std::string err = check_error(dir, "--set 'platform.hosts[1].uplink.bandwidth=fast'");
  CHECK_MESSAGE(err.find("error: --set platform.hosts[1].uplink.bandwidth=fast: hosts[1].uplink.bandwidth: ") == 0, err);

  write_file(dir + "/s.yaml", text + "sweep:\n  train.steps: [4, 8]\n");
  CHECK(check_error(dir, "--set train.steps=6").find("--set train.steps=6: train.steps: is a key of the scenario's sweep") !=
        std::string::npos);
  CHECK(check_error(dir, "--set 'sweep.train.steps=[4]'").find("the sweep block is read from the file only") != std::string::npos);
  const CliResult ok = run_locosim("check s.yaml --set train.batch_size=2", dir);  // every point gets it
  CHECK_MESSAGE(ok.exit_code == 0, ok.err);
  const locosim::Sweep swept = locosim::load_sweep(dir + "/s.yaml", std::nullopt, {{"train.batch_size", "2", "--set train.batch_size=2"}});
  REQUIRE(swept.points.size() == 2);
  for (const auto& point : swept.points) CHECK(point.scenario.train.batch_size == 2);
  fs::remove_all(dir);
}

TEST_CASE("what-if: --set changes the run and its resolved.yaml, a rerun with it is skipped, and compare shows the change") {
  const std::string dir = small_dir("set-run");
  const CliResult base = run_locosim("run s.yaml -o a -p diloco", dir);
  REQUIRE_MESSAGE(base.exit_code == 0, base.err);
  const CliResult fewer = run_locosim("run s.yaml -o b -p diloco --set train.steps=8", dir);
  REQUIRE_MESSAGE(fewer.exit_code == 0, fewer.err);
  CHECK(fewer.out.rfind("small: 2 workers, 1 policy, 8 steps each", 0) == 0);
  CHECK(read_file(dir + "/b/small/diloco/resolved.yaml").find("steps: 8") != std::string::npos);
  CHECK(read_file(dir + "/a/small/diloco/resolved.yaml").find("steps: 12") != std::string::npos);
  CHECK(read_file(dir + "/a/small/diloco/scenario.sha256") != read_file(dir + "/b/small/diloco/scenario.sha256"));

  const CliResult again = run_locosim("run s.yaml -o b -p diloco --set train.steps=8", dir);
  REQUIRE(again.exit_code == 0);
  CHECK_MESSAGE(again.out.find("1 of 1 runs finished earlier") != std::string::npos, again.out);
  const CliResult without = run_locosim("run s.yaml -o b -p diloco", dir);  // the file's steps: computed again
  REQUIRE(without.exit_code == 0);
  CHECK(without.out.find("finished earlier") == std::string::npos);
  CHECK(read_file(dir + "/b/small/diloco/resolved.yaml").find("steps: 12") != std::string::npos);

  // a: 12 steps, 3 rounds of 4; c: 8 steps, 2 rounds: two thirds of the bytes.
  REQUIRE(run_locosim("run s.yaml -o c -p diloco --set train.steps=8", dir).exit_code == 0);
  const CliResult compared = run_locosim("compare a/small c/small", dir);
  REQUIRE_MESSAGE(compared.exit_code == 0, compared.err);
  CHECK(compared.out.find("A: a/small\nB: c/small\n") == 0);
  CHECK(compared.out.find("policy  metric") != std::string::npos);
  CHECK(compared.out.find("diloco  wall-clock") != std::string::npos);
  const size_t sent = compared.out.find("MB sent per worker");
  REQUIRE(sent != std::string::npos);
  CHECK_MESSAGE(compared.out.substr(sent, compared.out.find('\n', sent) - sent).find("0.67x") != std::string::npos, compared.out);
  // Policy folders compare too; a folder that is no run is refused.
  CHECK(run_locosim("compare a/small/diloco c/small/diloco", dir).exit_code == 0);
  const CliResult missing = run_locosim("compare a/small nowhere", dir);
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("error: nowhere: no such run folder") != std::string::npos);
  fs::create_directories(dir + "/empty");
  const CliResult empty = run_locosim("compare empty a/small", dir);
  CHECK(empty.exit_code == 2);
  CHECK(empty.err.find("error: empty: not a run folder") != std::string::npos);
  CHECK(run_locosim("compare a/small", dir).exit_code == 2);
  fs::remove_all(dir);
}

namespace {

// The text after `key` on its line of `text` ("" if absent).
std::string after(const std::string& text, const std::string& key, size_t from = 0) {
  const size_t at = text.find(key, from);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  return text.substr(start, text.find('\n', start) - start);
}

}  // namespace

TEST_CASE("explain: check --explain gives each policy's collective, step compute, bytes per sync and the run's simulated wall-clock") {
  const std::string dir = small_dir("explain");
  const CliResult r = run_locosim("check s.yaml --explain", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string& out = r.out;
  CAPTURE(out);
  const size_t ddp = out.find("\n  ddp\n"), diloco = out.find("\n  diloco\n");
  REQUIRE(ddp != std::string::npos);
  REQUIRE(diloco != std::string::npos);
  // Two hosts outside any site: auto resolves to a ring, never printed as auto.
  CHECK(after(out, "collective            ", ddp) == "all-reduce ring");
  CHECK(after(out, "collective            ", diloco) == "all-reduce ring");
  CHECK(after(out, "one step's compute    ", ddp).rfind("gpu ", 0) == 0);
  CHECK(after(out, "per sync, per worker  ", ddp).find("; 12 syncs (every step)") != std::string::npos);
  CHECK(after(out, "per sync, per worker  ", diloco).find("; 3 syncs (every 4 steps)") != std::string::npos);
  CHECK(after(out, "simulated wall-clock  ", diloco).find("(the whole run simulated, timing only)") != std::string::npos);
  CHECK(after(out, "on this machine       ", diloco).find(" to ") != std::string::npos);
  CHECK(out.find("all 2 policies here: ") != std::string::npos);
  // DDP and DiLoCo all-reduce the same parameters: equal bytes per sync.
  const std::string ddp_bytes = after(out, "per sync, per worker  ", ddp), diloco_bytes = after(out, "per sync, per worker  ", diloco);
  CHECK(ddp_bytes.substr(0, ddp_bytes.find(';')) == diloco_bytes.substr(0, diloco_bytes.find(';')));

  // The simulated wall-clock is the run's: the table of a run prints the same.
  REQUIRE(run_locosim("run s.yaml -o out -p diloco", dir).exit_code == 0);
  const std::string wall = after(out, "simulated wall-clock  ", diloco);
  const CliResult table = run_locosim("report out/small", dir);
  CHECK_MESSAGE(table.out.find(wall.substr(0, wall.find(" ("))) != std::string::npos, table.out);

  // --set applies: a longer round, fewer syncs.
  const CliResult longer = run_locosim("check s.yaml --explain --set 'policies[diloco].inner_steps=6'", dir);
  REQUIRE_MESSAGE(longer.exit_code == 0, longer.err);
  CHECK(after(longer.out, "per sync, per worker  ", longer.out.find("\n  diloco\n")).find("; 2 syncs (every 6 steps)") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("report-only: adding train.target_loss to a finished scenario reruns nothing and updates the table") {
  const std::string dir = small_dir("target");
  REQUIRE(run_locosim("run s.yaml -o a -p diloco", dir).exit_code == 0);
  const std::string hash = read_file(dir + "/a/small/diloco/scenario.sha256");
  // A target every evaluation reaches: time to target is the first evaluation's time.
  write_file(dir + "/s.yaml", replaced(small_scenario_yaml(), "  eval_batches: 2\n", "  eval_batches: 2\n  target_loss: 99\n"));
  const CliResult targeted = run_locosim("run s.yaml -o a -p diloco", dir);
  REQUIRE_MESSAGE(targeted.exit_code == 0, targeted.err);
  CHECK_MESSAGE(targeted.out.find("1 of 1 runs finished earlier") != std::string::npos, targeted.out);
  CHECK(targeted.out.find("time to 99.00") != std::string::npos);
  CHECK(read_file(dir + "/a/small/diloco/scenario.sha256") == hash);
  CHECK(read_file(dir + "/a/small/diloco/summary.json").find("\"target_loss\": 99.0") != std::string::npos);
  CHECK(read_file(dir + "/a/small/diloco/resolved.yaml").find("target_loss: 99") != std::string::npos);
  // The folder is still whole (its marker lists the new sizes), and the table the same as a run's own.
  const CliResult again = run_locosim("run s.yaml -o a -p diloco", dir);
  CHECK(again.out.find("1 of 1 runs finished earlier") != std::string::npos);
  CHECK(again.out.find("finished earlier, but") == std::string::npos);  // not damaged
  REQUIRE(run_locosim("run s.yaml -o b -p diloco", dir).exit_code == 0);
  // (Re-derived from metrics.csv, the time to target has its 9 digits: the tables print fewer.)
  CHECK(run_locosim("report a/small", dir).out == run_locosim("report b/small", dir).out);
  fs::remove_all(dir);
}
