// Goldens: metrics.csv and events.csv of every registered policy (its registry example) on the small
// two-host scenario, pinned in tests/golden/<policy>/. A change that moves a number or an event of any
// policy fails here, naming the policy and the first differing line. When the change is intended,
// regenerate them and commit the diff:
//   cd build && LOCOSIM_UPDATE_GOLDENS=1 ctest -R goldens
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"
#include "tests/registered_policies.hpp"

using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

// "line N: expected <a>, got <b>" for the first line where the two texts differ; "" if equal.
std::string first_difference(const std::string& expected, const std::string& got) {
  std::istringstream a(expected), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "";
    if (!more_a || !more_b || la != lb) {
      return "line " + std::to_string(line) + ": expected '" + (more_a ? la : "<end>") + "', got '" +
             (more_b ? lb : "<end>") + "'";
    }
  }
}

}  // namespace

TEST_CASE("goldens: every registered policy's metrics.csv and events.csv on the small scenario are the pinned ones") {
  const std::string dir = scratch_dir("goldens");
  write_corpus(dir + "/corpus.txt", 20000);
  const std::string yaml = small_scenario_yaml();
  write_file(dir + "/s.yaml", with_policies(yaml, registered_policies_block()));
  const CliResult r = run_locosim("run s.yaml -o runs", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const bool update = std::getenv("LOCOSIM_UPDATE_GOLDENS") != nullptr;
  for (const std::string& policy : registered_policy_names()) {
    for (const char* file : {"metrics.csv", "events.csv"}) {
      CAPTURE(policy);
      CAPTURE(file);
      const std::string got = read_file(dir + "/runs/small/" + policy + "/" + file);
      const fs::path golden = fs::path("tests/golden") / policy / file;
      if (update) {
        fs::create_directories(golden.parent_path());
        write_file(golden.string(), got);
        MESSAGE("wrote " << golden.string());
        continue;
      }
      REQUIRE_MESSAGE(fs::exists(golden), "no goldens for " << policy << ": cd build && LOCOSIM_UPDATE_GOLDENS=1 ctest -R goldens");
      const std::string difference = first_difference(read_file(golden.string()), got);
      CHECK_MESSAGE(difference.empty(), policy << "/" << std::string(file) << " " << difference);
    }
  }
  fs::remove_all(dir);
}
