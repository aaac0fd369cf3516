// Goldens: metrics.csv and events.csv of every registered policy (its registry example) on the small
// two-host scenario, pinned in tests/golden/<policy>/; events.csv and trace.json of a relay on eight
// hosts of four speeds, pinned in tests/golden/relay-ties/<policy>/. A change that moves a number or an
// event of any policy fails here, naming the policy and the first differing line. When the change is
// intended, regenerate them and commit the diff:
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

// Compares `got` with the golden file `golden` (tests/golden/...); with LOCOSIM_UPDATE_GOLDENS set,
// writes it there instead.
void check_golden(const std::string& got, const fs::path& golden) {
  if (std::getenv("LOCOSIM_UPDATE_GOLDENS") != nullptr) {
    fs::create_directories(golden.parent_path());
    write_file(golden.string(), got);
    MESSAGE("wrote " << golden.string());
    return;
  }
  REQUIRE_MESSAGE(fs::exists(golden), "no golden " << golden.string() << ": cd build && LOCOSIM_UPDATE_GOLDENS=1 ctest -R goldens");
  const std::string difference = first_difference(read_file(golden.string()), got);
  CHECK_MESSAGE(difference.empty(), golden.string() << " " << difference);
}

}  // namespace

TEST_CASE("goldens: every registered policy's metrics.csv and events.csv on the small scenario are the pinned ones") {
  const std::string dir = scratch_dir("goldens");
  write_corpus(dir + "/corpus.txt", 20000);
  const std::string yaml = small_scenario_yaml();
  write_file(dir + "/s.yaml", with_policies(yaml, registered_policies_block()));
  const CliResult r = run_locosim("run s.yaml -o runs", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  for (const std::string& policy : registered_policy_names()) {
    for (const char* file : {"metrics.csv", "events.csv"}) {
      CAPTURE(policy);
      CAPTURE(file);
      check_golden(read_file(dir + "/runs/small/" + policy + "/" + file), fs::path("tests/golden") / policy / file);
    }
  }
  fs::remove_all(dir);
}

// The relay's send and recv rows that tie on (start, end) are recorded in the order SimGrid ends their
// comms, which follows the order its actors were scheduled in: a change to how collectives' sides are
// started or woken (kept actors, batched simcalls) reorders them without moving any time or byte. The
// writers put rows in a total order (events.csv: worker, start, end, kind, peer, bytes), so the files
// must not move. Eight hosts of mixed-gpus.yaml's four speeds and links, the relay all-reducing (DiLoCo)
// and all-gathering (DeMo), timing only: both files pinned.
TEST_CASE("goldens: relay-ties: tied relay rows of events.csv and trace.json on a heterogeneous relay keep their order") {
  const std::string dir = scratch_dir("goldens-relay-ties");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", R"(name: relay-ties
seed: 1
numerics: none
platform:
  accelerators:
    h100: {peak: 989 TFLOPS, efficiency: 0.4}
    a100: {peak: 312 TFLOPS, efficiency: 0.4}
    rtx4090: {peak: 165 TFLOPS, efficiency: 0.35}
    rtx3090: {peak: 71 TFLOPS, efficiency: 0.35}
  hosts:
    - {name: h100, accelerator: h100, count: 2, uplink: {bandwidth: 1 Gbps, latency: 5 ms}, downlink: {bandwidth: 1 Gbps, latency: 5 ms}}
    - {name: a100, accelerator: a100, count: 2, uplink: {bandwidth: 1 Gbps, latency: 10 ms}, downlink: {bandwidth: 1 Gbps, latency: 10 ms}}
    - {name: rtx4090, accelerator: rtx4090, count: 2, uplink: {bandwidth: 40 Mbps, latency: 15 ms}, downlink: {bandwidth: 400 Mbps, latency: 15 ms}}
    - {name: rtx3090, accelerator: rtx3090, count: 2, uplink: {bandwidth: 20 Mbps, latency: 20 ms}, downlink: {bandwidth: 200 Mbps, latency: 20 ms}}
  relay:
    uplink: {bandwidth: 10 Gbps, latency: 5 ms}
    downlink: {bandwidth: 10 Gbps, latency: 5 ms}
network: {all_reduce: relay}
data: {path: corpus.txt, eval_fraction: 0.1}
model: {preset: tiny, d_model: 32, n_layers: 1, n_heads: 2, seq_len: 32}
train: {steps: 2, batch_size: 4, eval_every: 2, eval_batches: 1}
report: {link_bucket: 10 s}
timing: {params: 25.0e6, tokens_per_step: 65536}
policies:
  - {name: diloco, inner_steps: 1, wire: fp16}
  - {name: demo, lr: 3.0e-3}
)");
  const CliResult r = run_locosim("run s.yaml -o runs", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  for (const std::string policy : {"diloco", "demo"}) {
    for (const std::string file : {"events.csv", "trace.json"}) {
      CAPTURE(policy);
      CAPTURE(file);
      check_golden(read_file(dir + "/runs/relay-ties/" + policy + "/" + file),
                   fs::path("tests/golden/relay-ties") / policy / file);
    }
  }
  fs::remove_all(dir);
}
