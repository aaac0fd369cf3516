// The step pool (sim/step_pool.hpp) changes how fast a run goes, never what it writes: every file of
// every policy's run folder is byte-identical with the workers' steps run one after another and on a
// pool of threads, on a static world and on a changing one (hosts lost in the middle of a step).
#include <filesystem>

#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

// Runs `scenario_file` with --step-threads 1 and 3 (more threads than workers computing at once
// on some steps, fewer on others) and checks that the two run folders hold the same files, byte for byte.
void check_pool_changes_nothing(const std::string& name, const std::string& scenario_file) {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 60000);
  write_file(dir + "/s.yaml", portable_scenario(read_file(scenario_file)));
  for (const char* threads : {"1", "3"}) {
    CliResult r = run_locosim(std::string("run s.yaml -j 2 --step-threads ") + threads + " -o runs-" + threads, dir);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  }
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir + "/runs-1")) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), dir + "/runs-1").string();
    CAPTURE(relative);
    const std::string pooled = dir + "/runs-3/" + relative;
    REQUIRE(fs::exists(pooled));
    CHECK(read_file(entry.path().string()) == read_file(pooled));
    ++files;
  }
  CHECK(files > 10);
}

}  // namespace

TEST_CASE("pool: every policy's files are byte-identical with the steps on a pool of threads") {
  check_pool_changes_nothing("pool-static", "scenarios/tests/timing-small.yaml");
}

TEST_CASE("pool: on a changing world (hosts lost mid-step, churn) the files are byte-identical too") {
  check_pool_changes_nothing("pool-world", "scenarios/tests/world-small.yaml");
}

TEST_CASE("pool: --step-threads must be a positive count") {
  const std::string dir = scratch_dir("pool-usage");
  CliResult r = run_locosim("run nothing.yaml --step-threads 0", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("step-threads") != std::string::npos);
}
