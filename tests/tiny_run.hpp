// A tiny scenario for the report tests (trace, sweep, report): 3 workers on an asymmetric platform
// file, a one-layer model with seq_len 16, 8 steps, ddp and diloco (H=4), a generated corpus.
// Priced as a 5M-parameter model so that traffic takes simulated seconds.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>

namespace locosim::testing {

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// A fresh folder under the system temp folder holding corpus.txt and platform.yaml.
inline std::string tiny_scenario_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("locosim-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string corpus;
  const char* subjects[] = {"the sender", "a worker", "the relay", "each peer", "the ring"};
  const char* verbs[] = {"sends", "averages", "waits for", "computes", "gathers"};
  const char* objects[] = {"the shards.", "a fragment.", "its gradients.", "the outer step.", "every chunk."};
  for (int i = 0; corpus.size() < 40000; ++i) {
    corpus += std::string(subjects[i % 5]) + " " + verbs[(i / 5) % 5] + " " + objects[(i / 25) % 5] + "\n";
  }
  write_text((dir / "corpus.txt").string(), corpus);
  write_text((dir / "platform.yaml").string(),
             "accelerators:\n"
             "  gpu: {peak: 100 TFLOPS, efficiency: 0.4}\n"
             "hosts:\n"
             "  - {name: home, accelerator: gpu, count: 2, uplink: {bandwidth: 20 Mbps, latency: 10 ms},"
             " downlink: {bandwidth: 200 Mbps, latency: 10 ms}}\n"
             "  - {name: uni, accelerator: gpu, uplink: {bandwidth: 50 Mbps, latency: 5 ms},"
             " downlink: {bandwidth: 500 Mbps, latency: 5 ms}}\n");
  return dir.string();
}

// The scenario's YAML; `extra` is appended (a sweep block, say).
inline std::string tiny_scenario_yaml(const std::string& extra = "") {
  return "name: tiny\n"
         "platform: platform.yaml\n"
         "data: {path: corpus.txt}\n"
         "model: {preset: tiny, d_model: 32, n_layers: 1, n_heads: 2, seq_len: 16}\n"
         "train: {steps: 8, batch_size: 4, eval_every: 4, eval_batches: 1, optimizer: {name: adamw, lr: 1.0e-3}}\n"
         "timing: {params: 5.0e6, tokens_per_step: 16384}\n"
         "policies:\n"
         "  - ddp\n"
         "  - {name: diloco, inner_steps: 4}\n" +
         extra;
}

// A fresh folder `name` (as tiny_scenario_dir) holding scenario.yaml, the scenario with `extra`
// appended from line 10 on; returns the scenario's path.
inline std::string tiny_scenario_file(const std::string& name, const std::string& extra = "") {
  const std::string dir = tiny_scenario_dir(name);
  write_text(dir + "/scenario.yaml", tiny_scenario_yaml(extra));
  return dir + "/scenario.yaml";
}

}  // namespace locosim::testing
