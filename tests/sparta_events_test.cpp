// SPARTA's bytes in events.csv against the README's formula: every step a worker sends
// 2(K−1)/K · Σ_t k_t · b (k_t the count drawn for tensor t at that step, sparta_count), and
// sparta_diloco adds DiLoCo's 2(K−1)/K · P · b every H steps.
#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/sparta.hpp"
#include "models/llama.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::testing;

TEST_CASE("sparta: the bytes each worker sends per step in events.csv are 2(K-1)/K * sum_t k_t * b, plus P * b every H with DiLoCo") {
  const std::string dir = scratch_dir("sparta-bytes");
  write_corpus(dir + "/corpus.txt", 20000);
  const std::string policies =
      "policies:\n"
      "  - {name: sparta, p: 0.01, seed: 4}\n"
      "  - {name: sparta_diloco, p: 0.01, seed: 4, inner_steps: 4, wire: fp16}\n";
  std::string yaml = small_scenario_yaml();
  yaml = yaml.substr(0, yaml.find("policies:")) + policies;
  write_file(dir + "/s.yaml", yaml);
  const CliResult r = run_locosim("run s.yaml -o runs", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);

  // The scenario's model (preset tiny, seq_len 16): its tensors' sizes, in the policy's order.
  LlamaConfig cfg = LlamaConfig::preset("tiny");
  cfg.seq_len = 16;
  std::vector<int64_t> sizes;
  double params = 0;
  for (const auto& p : TinyLlama(cfg)->parameters()) {
    sizes.push_back(p.numel());
    params += static_cast<double>(p.numel());
  }
  const double k_workers = 2, ring = 2 * (k_workers - 1) / k_workers;
  const int steps = 12;
  for (const auto& [policy, b, h] : {std::tuple{std::string("sparta"), 4.0, 0}, std::tuple{std::string("sparta_diloco"), 2.0, 4}}) {
    CAPTURE(policy);
    std::vector<double> expected;
    for (int s = 0; s < steps; ++s) {
      double values = 0;
      for (size_t t = 0; t < sizes.size(); ++t) values += static_cast<double>(sparta_count(4, s, t, sizes[t], 0.01));
      double bytes = ring * values * b;
      if (h > 0 && (s + 1) % h == 0) bytes += ring * params * b;
      if (bytes > 0) expected.push_back(bytes);
    }
    const auto got = sent_per_sync(read_file(dir + "/runs/small/" + policy + "/events.csv"));
    REQUIRE(got.size() == 2);
    for (const auto& [worker, bytes] : got) {
      CAPTURE(worker);
      CHECK(bytes == expected);
    }
    MESSAGE(policy << ": " << expected.size() << " syncs, the first of " << expected.front() << " bytes; P = " << params);
  }
  std::filesystem::remove_all(dir);
}
