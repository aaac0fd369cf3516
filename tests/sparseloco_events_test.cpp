// SparseLoCo's bytes in events.csv against the README's formula, computed here from the model's shapes
// alone: every H steps a worker all-gathers Σ_t ⌈C_t·k'·b_idx/8⌉ + ⌈C_t·k'·2/8⌉ + 16 bytes (C_t chunks
// of n_t values, k' = min(k, n_t), b_idx = ⌈log2 n_t⌉ bits, 0 when k' = n_t); two workers: each sends it once.
#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "models/llama.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::testing;

namespace {

// The README's bytes of one tensor: chunks as DeMo's (1-D: 1 × n; else shape[0] × the rest; blocks
// min(extent, s) per axis, padded).
double tensor_bytes(const std::vector<int64_t>& shape, int64_t s, int64_t k) {
  int64_t rows = 1, cols = 1;
  if (shape.size() >= 2) {
    rows = shape[0];
    for (size_t i = 1; i < shape.size(); ++i) cols *= shape[i];
  } else {
    for (int64_t d : shape) cols *= d;
  }
  const int64_t br = std::min(rows, s), bc = std::min(cols, s);
  const int64_t chunks = ((rows + br - 1) / br) * ((cols + bc - 1) / bc), n = br * bc;
  const int64_t kept = std::min(k, n);
  int64_t bits = 0;
  while ((int64_t{1} << bits) < n) ++bits;
  if (kept == n) bits = 0;
  return static_cast<double>((chunks * kept * bits + 7) / 8 + (chunks * kept * 2 + 7) / 8 + 16);
}

}  // namespace

TEST_CASE("sparseloco: the bytes each worker sends per round in events.csv are sum_t ceil(C_t*k*b_idx/8) + ceil(C_t*k/4) + 16") {
  const std::string dir = scratch_dir("sparseloco-bytes");
  write_corpus(dir + "/corpus.txt", 20000);
  std::string yaml = small_scenario_yaml();
  yaml = yaml.substr(0, yaml.find("policies:")) + "policies:\n  - {name: sparseloco, inner_steps: 4, topk: 8, chunk: 16}\n";
  write_file(dir + "/s.yaml", yaml);
  const CliResult r = run_locosim("run s.yaml -o runs", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);

  LlamaConfig cfg = LlamaConfig::preset("tiny");
  cfg.seq_len = 16;
  double round = 0, params = 0;
  for (const auto& p : TinyLlama(cfg)->parameters()) {
    round += tensor_bytes(p.sizes().vec(), 16, 8);
    params += static_cast<double>(p.numel());
  }
  const std::vector<double> expected(3, round);  // 12 steps, H 4
  const auto got = sent_per_sync(read_file(dir + "/runs/small/sparseloco/events.csv"));
  REQUIRE(got.size() == 2);
  for (const auto& [worker, bytes] : got) {
    CAPTURE(worker);
    CHECK(bytes == expected);
  }
  MESSAGE("sparseloco: " << round << " bytes a round for P = " << params << " (fp32 DiLoCo: " << 4 * params << ")");
  std::filesystem::remove_all(dir);
}
