// A scenario: the platform, the data, the model, the training settings and the policies to compare
// on identical data and initial weights. load_scenario validates all of it before anything runs.
// No LibTorch here or in scenario.cpp: the loader (and its fuzzer) reads every key without it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/policies.hpp"
#include "algorithms/train_config.hpp"
#include "config/error.hpp"
#include "config/network_model.hpp"
#include "config/platform.hpp"
#include "config/section.hpp"
#include "config/world.hpp"
#include "models/corpus_config.hpp"
#include "models/llama_config.hpp"

namespace locosim {

struct DataConfig {
  std::string path;                 // a UTF-8 text file; "kjv" is the default corpus in the cache
  double eval_fraction = 0.05;      // tail of the text held out for evaluation: the test split the tables report
  double validation_fraction = 0;   // held out before it: what `tune:` chooses on (0: no validation split)
  ShardMode split = ShardMode::iid;
};

// Prices the small model that really trains as a larger one (design §6): FLOPs and wire bytes scale
// by params / the proxy's params, and tokens per step replace the proxy's batch × seq_len.
struct TimingConfig {
  std::optional<double> params;            // P_target
  std::optional<double> tokens_per_step;   // per worker
};

// report.link_bucket's bounds, in the file and on the command line (--link-bucket): links.csv has a
// row per link and bucket, so below 1 ms a long run writes billions of rows; past 1e9 s (30 years)
// every run is one bucket.
inline constexpr double kMinLinkBucketS = 1e-3;
inline constexpr double kMaxLinkBucketS = 1e9;

struct Scenario {
  std::string file;
  std::string name;                 // runs/<name>/...; defaults to the file's stem
  uint64_t seed = 1;                // the training seed (initial weights, batch order) and the world's churn
  // `seeds:` the training seeds each policy runs at (a sweep expands them: cli/sweep.hpp); {seed}
  // without the key. The world's churn keeps `seed`'s draws at every one of them.
  std::vector<uint64_t> seeds = {1};
  PlatformSpec platform;
  CollectiveChoice network;         // how collectives travel; `auto` resolved against the platform
  NetworkModelSpec network_model;   // how flows are timed: ideal or calibrated TCP
  WorldSpec world;                  // how the platform changes during the run; empty: it does not
  DataConfig data;
  LlamaConfig model;
  TrainConfig train;
  TimingConfig timing;
  int threads = 1;                  // LibTorch intra-op threads (results depend on it: part of the scenario)
  std::string device = "cpu";       // runtime.device: cpu, cuda or cuda:N (scenario/device.hpp)
  std::optional<ConfigError> device_at;  // where runtime.device is in the file, for errors raised at run time
  // numerics: none: every policy's schedule of compute and collectives without the training itself
  // (parameters on torch's meta device: shapes, no values). Same times and bytes; no loss.
  bool timing_only = false;
  // What only the simulator can do, at its place in the file (numerics: none): the real backend
  // refuses the scenario with it.
  std::optional<ConfigError> simulator_only;
  double link_bucket_s = 0;         // report.link_bucket: time bucket of links.csv; 0: automatic (~200 buckets)
  std::string trace = "messages";   // report.trace: trace.json's detail: messages | collectives | none
  std::vector<PolicySpec> policies;
  std::string resolved_yaml;        // every setting with its default filled in

  int world_size() const { return static_cast<int>(platform.hosts.size()); }
};

// `seeds: N` runs at most this many seeds (a list as long, too).
inline constexpr int64_t kMaxSeeds = 100;
// A policy's `tune:` grid has at most this many points.
inline constexpr size_t kMaxTunePoints = 64;

// Reads and validates a scenario file. Throws ConfigError (file, line, dotted key, constraint).
// `overrides` (the command line's --set) are put in its tree first, then read as strictly as the file:
// a key under platform. reaches into the platform file when the scenario names one (its key there
// without the "platform." prefix). They change the resolved YAML, so the run's hash.
Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides = {});
// The same for YAML text that stands for the file `path` (relative paths resolve next to it): a grid
// point of a `sweep:` (cli/sweep.hpp), whose positions in messages refer to `yaml`, not to the file.
Scenario load_scenario_text(const std::string& yaml, const std::string& path, const std::vector<Override>& overrides = {});

// Where the default corpus lives ($LOCOSIM_CACHE, else $XDG_CACHE_HOME/locosim, else ~/.cache/locosim).
std::string default_corpus_path();

// runtime.device: cpu, cuda, or cuda:N with N in 0..kMaxDeviceIndex (scenario/device.hpp finds it).
inline constexpr int kMaxDeviceIndex = 63;
bool valid_device_name(const std::string& name);
// The N of "cuda:N"; -1 for "cuda". REQUIRES: valid_device_name(name) and name != "cpu".
int cuda_device_index(const std::string& name);

}  // namespace locosim
