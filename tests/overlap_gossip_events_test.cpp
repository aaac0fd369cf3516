// The bytes in events.csv of the two methods whose traffic sent_per_sync cannot split by round (Eager
// DiLoCo's all-reduce runs under the next H steps) or that no whole-group collective carries (NoLoCo's
// pairs), against the README's formulas, from the model's parameter count alone: over a run of R
// rounds each worker sends R times the formula.
//   eager_diloco: 2(K−1)/K · P · b a round (ring all-reduce of the pseudo-gradient)
//   noloco:       2(n−1)/n · 2P · b a round among its group of n (φ and Δ together; pairs: 2P · b)
#include <filesystem>
#include <map>
#include <string>

#include "models/llama.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::testing;

namespace {

// P: the parameter count of the small scenario's model (tiny, seq_len 16).
double small_model_params() {
  LlamaConfig cfg = LlamaConfig::preset("tiny");
  cfg.seq_len = 16;
  double params = 0;
  for (const auto& p : TinyLlama(cfg)->parameters()) params += static_cast<double>(p.numel());
  return params;
}

// Every byte each worker sent over the run (its send events), by worker.
std::map<int, double> bytes_sent(const std::string& events_csv) {
  std::map<int, double> sent;
  for (const EventRow& e : event_rows(events_csv)) {
    if (e.kind == "send") sent[e.worker] += e.bytes;
  }
  return sent;
}

// Runs the small scenario (12 steps) with `policy` on `hosts` workers; returns each worker's bytes sent.
std::map<int, double> run_small(const std::string& name, const std::string& policy, int hosts) {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 20000);
  std::string yaml = small_scenario_yaml();
  const std::string slow = "    - {name: slow, accelerator: gpu, uplink: {bandwidth: 10 Mbps, latency: 20 ms}, downlink: "
                           "{bandwidth: 100 Mbps, latency: 20 ms}}\n";
  std::string more = slow;
  for (int i = 2; i < hosts; ++i) more += replaced(slow, "name: slow", "name: slow" + std::to_string(i));
  yaml = replaced(yaml, slow, more);
  write_file(dir + "/s.yaml", yaml.substr(0, yaml.find("policies:")) + "policies:\n  - " + policy + "\n");
  const CliResult r = run_locosim("run s.yaml -o runs", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string label = policy.substr(policy.find("name: ") + 6, policy.find(',') - policy.find("name: ") - 6);
  const auto sent = bytes_sent(read_file(dir + "/runs/small/" + label + "/events.csv"));
  std::filesystem::remove_all(dir);
  return sent;
}

}  // namespace

TEST_CASE("eager_diloco: each worker sends 2(K-1)/K * P * b a round in events.csv, every round's all-reduce included") {
  const double params = small_model_params();
  for (const auto& [wire, b] : std::map<std::string, double>{{"fp32", 4}, {"fp16", 2}}) {
    CAPTURE(wire);
    const auto sent = run_small("eager-bytes-" + wire, "{name: eager_diloco, inner_steps: 4, wire: " + wire + "}", 2);
    REQUIRE(sent.size() == 2);
    for (const auto& [worker, bytes] : sent) {
      CAPTURE(worker);
      CHECK(bytes == 3 * (2.0 * (2 - 1) / 2) * params * b);  // 12 steps, H 4: 3 rounds, K = 2
    }
  }
}

TEST_CASE("noloco: each worker sends 2(n-1)/n * 2P * b a round in events.csv among its pair, on 4 workers") {
  const double params = small_model_params();
  const auto sent = run_small("noloco-bytes", "{name: noloco, inner_steps: 4}", 4);
  REQUIRE(sent.size() == 4);
  for (const auto& [worker, bytes] : sent) {
    CAPTURE(worker);
    CHECK(bytes == 3 * (2.0 * (2 - 1) / 2) * 2 * params * 4);  // 3 rounds, pairs, fp32
  }
}
