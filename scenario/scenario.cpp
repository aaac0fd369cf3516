// load_scenario: the scenario schema, read strictly, every default filled in.
//
//   name: quickstart                      # runs/<name>/; default: the file's stem
//   seed: 1
//   seeds: 3                              # optional: train at seeds 1, 2, 3 (or a list [1, 7, 9]); the tables
//                                         # print mean ± 95% interval; the world's churn keeps seed's draws
//   numerics: full                        # none: timing only (times, bytes, utilization; no training, no loss)
//   platform: ../platforms/x.yaml         # a platform file (relative to this one) or an inline mapping
//   network: {all_reduce: auto, all_gather: auto}   # ring|relay|hierarchical, mesh|ring|relay (sim/collectives.hpp)
//   world:   {failure_timeout: 10 s, events: [...], traces: [...], churn: [...]}   # optional (config/world.cpp)
//   data:    {path: kjv, eval_fraction: 0.05, split: iid}       # split: iid | non_iid; validation_fraction: a
//                                                               # validation split for tune: (default 0: none)
//   model:   {preset: tiny, d_model: 64, n_layers: 2, n_heads: 4, seq_len: 64}
//   train:   {steps: 200, batch_size: 8, eval_every: 50, eval_batches: 4, target_loss: 2.5,
//             optimizer: {name: adamw, lr: 1e-3, ...}}
//   timing:  {params: 1.1e9, tokens_per_step: 524288}           # optional: price as a larger model
//   runtime: {threads: 1, device: cpu}                        # device: cpu | cuda | cuda:N (scenario/device.hpp)
//   report:  {link_bucket: auto, trace: messages}               # links.csv time bucket: auto (~200) or "10 s";
//                                                                # trace.json: messages | collectives | none
//   policies: [ddp, {name: diloco, label: diloco-h50, inner_steps: 50}]
//   sweep:                                # optional: run the scenario over a grid (cli/sweep.hpp)
//     platform.hosts[*].uplink.bandwidth: [10 Mbps, 100 Mbps, 1000 Mbps]
//     policies[diloco].inner_steps: [50, 500]
// A sweep key is a dotted path into this file; [i] picks a list item by index, [*] every item, [x] the
// policy entry labelled (or else named) x. A platform file is read into the scenario when a key under
// platform. reaches into it. The grid is every combination (first key slowest); each point is checked
// before anything runs and runs into runs/<name>/<point>/<policy>/, with one runs/<name>/summary.csv.
#include "scenario/scenario.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>

#include "algorithms/async_diloco.hpp"
#include "config/error.hpp"
#include "config/section.hpp"

namespace locosim {
namespace fs = std::filesystem;

std::string default_corpus_path() {
  if (const char* cache = std::getenv("LOCOSIM_CACHE")) return std::string(cache) + "/kjv.txt";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return std::string(xdg) + "/locosim/kjv.txt";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/locosim/kjv.txt";
}

namespace {

// `platform_overrides`: the --set keys that reach into the platform file (applied to it when the scenario
// names one; they are applied to the scenario's tree before this when its platform is inline).
PlatformSpec read_platform(Section& top, const std::vector<Override>& platform_overrides) {
  if (top.is_mapping("platform")) {
    Section inline_platform = top.child("platform");
    return parse_platform(inline_platform);
  }
  std::string path = top.file_path("platform");
  const std::string problem = regular_file_problem(path, kMaxYamlFileBytes);
  if (problem == "does not exist") top.fail("platform", "file '" + path + "' does not exist");
  if (!problem.empty()) top.fail("platform", "file '" + path + "' " + problem + "; a platform is a YAML text file");
  Section file = Section::load_file(path);
  file.apply_overrides(platform_overrides);
  PlatformSpec spec = parse_platform(file);
  top.adopt_resolved("platform_resolved", file);
  return spec;
}

DataConfig read_data(Section& data) {
  DataConfig d;
  std::string path = data.text("path", "kjv");
  if (path == "kjv") {
    d.path = default_corpus_path();
    if (!fs::exists(d.path)) {
      data.fail("path", "the default corpus is not at " + d.path +
                            "; run scripts/fetch-corpus.sh (make demo and make test do it)");
    }
  } else {
    d.path = data.file_path("path");
  }
  std::string problem = corpus_file_problem(d.path);
  if (!problem.empty()) data.fail("path", "'" + d.path + "' " + problem);
  d.eval_fraction = data.number("eval_fraction", d.eval_fraction, Range::open_closed(0, 0.5));
  // Read only where given: a scenario without it keeps the run hash it always had.
  if (data.has("validation_fraction")) {
    d.validation_fraction = data.number("validation_fraction", std::nullopt, Range::closed(0, 0.5));
  }
  d.split = data.choice("split", {"iid", "non_iid"}, "iid") == "iid" ? ShardMode::iid : ShardMode::non_iid;
  data.finish();
  return d;
}

LlamaConfig read_model(Section& model) {
  std::string preset = model.choice("preset", {"tiny", "small", "base"}, "tiny");
  LlamaConfig c = LlamaConfig::preset(preset);
  // The proxy model trains for real, one copy per worker: sizes past these do not fit in memory
  // (LlamaConfig::problem also bounds the parameter count). Price a larger model with timing.params.
  c.d_model = model.integer("d_model", c.d_model, Range::closed(1, 16384));
  c.n_layers = model.integer("n_layers", c.n_layers, Range::closed(1, 512));
  c.n_heads = model.integer("n_heads", c.n_heads, Range::closed(1, 1024));
  c.seq_len = model.integer("seq_len", c.seq_len, Range::closed(2, 131072));
  c.ffn_hidden = model.integer("ffn_hidden", c.ffn_hidden, Range::closed(0, 262144));  // 0: 8/3·d_model
  std::string problem = c.problem();
  if (!problem.empty()) model.fail("", problem);
  model.finish();
  return c;
}

void check_data_fits(Section& top, const Scenario& s) {
  const double bytes = static_cast<double>(fs::file_size(s.data.path));
  const double train_per_worker = bytes * (1 - s.data.eval_fraction - s.data.validation_fraction) / s.world_size();
  const double eval = bytes * s.data.eval_fraction, validation = bytes * s.data.validation_fraction;
  const double window = static_cast<double>(s.model.seq_len + 1);
  if (s.data.validation_fraction > 0 && validation < window) {
    top.fail("data", "the corpus '" + s.data.path + "' (" + std::to_string(static_cast<int64_t>(bytes)) +
                         " bytes) leaves the validation split fewer than seq_len + 1 = " +
                         std::to_string(s.model.seq_len + 1) + " bytes: raise data.validation_fraction");
  }
  if (train_per_worker < 2 * window || eval < window) {
    top.fail("data", "the corpus '" + s.data.path + "' (" + std::to_string(static_cast<int64_t>(bytes)) +
                         " bytes) is too small for " + std::to_string(s.world_size()) + " workers and seq_len " +
                         std::to_string(s.model.seq_len) + ": each worker needs at least " +
                         std::to_string(2 * (s.model.seq_len + 1)) + " train bytes and the eval split " +
                         std::to_string(s.model.seq_len + 1));
  }
}

// Attention scores the proxy keeps for the backward pass: batch × heads × seq_len² floats per layer.
constexpr double kMaxAttentionScores = double(1ull << 31);  // 8 GiB of fp32, all layers together

void check_activations_fit(Section& train, const Scenario& s) {
  const double scores = static_cast<double>(s.train.batch_size) * static_cast<double>(s.model.n_heads) *
                        static_cast<double>(s.model.seq_len) * static_cast<double>(s.model.seq_len) *
                        static_cast<double>(s.model.n_layers);
  if (scores > kMaxAttentionScores) {
    train.fail("batch_size", "batch_size (" + std::to_string(s.train.batch_size) + ") × model n_layers (" +
                                 std::to_string(s.model.n_layers) + ") × n_heads (" + std::to_string(s.model.n_heads) +
                                 ") × seq_len² (" + std::to_string(s.model.seq_len) + "²) is " +
                                 std::to_string(static_cast<int64_t>(scores)) +
                                 " attention scores per step, more than 2^31 (8 GiB of fp32): the proxy model trains "
                                 "for real; lower batch_size or seq_len, and price the larger batch with "
                                 "timing.tokens_per_step");
  }
}

// A synchronization period longer than the run means the policy never synchronizes (nor sends a byte).
void check_sync_periods(std::vector<Section>& entries, const Scenario& s) {
  for (size_t i = 0; i < s.policies.size(); ++i) {
    const auto period = sync_period(s.policies[i]);
    if (!period || period->second <= s.train.steps) continue;
    const auto& [key, steps] = *period;
    entries[i].fail(key, "must be <= train.steps (" + std::to_string(s.train.steps) + "), got " +
                             std::to_string(steps) + (entries[i].has(key) ? "" : " (the default)") +
                             ": the run would never synchronize; lower " + key + " or raise train.steps");
  }
}

// Delayed Nesterov spreads at most the whole momentum over a cycle of N pushes: c·N <= 1, where N
// defaults to the number of workers (known only here).
void check_async_policies(std::vector<Section>& entries, const Scenario& s) {
  for (size_t i = 0; i < s.policies.size(); ++i) {
    const auto* c = std::any_cast<AsyncDiLoCoConfig>(&s.policies[i].config);
    if (!c || c->outer != AsyncOuter::delayed_nesterov) continue;
    const int64_t n = c->delay > 0 ? c->delay : s.world_size();
    if (c->momentum_activation * static_cast<double>(n) <= 1) continue;
    entries[i].fail("momentum_activation", "must be <= 1/delay = 1/" + std::to_string(n) +
                                               (c->delay > 0 ? "" : " (delay 0: the number of workers)") + ", got " +
                                               std::to_string(c->momentum_activation));
  }
}

}  // namespace

// A tuned entry's point: "<label>.<key>-<value>..." where that is an identifier, else "<label>.tune<i>".
static std::string tuned_label(const std::string& label, const std::vector<std::pair<std::string, std::string>>& values,
                               size_t index) {
  std::string name = label;
  for (const auto& [key, value] : values) {
    name += "." + key + "-";
    for (char c : value) name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  }
  return is_identifier(name) ? name : label + ".tune" + std::to_string(index);
}

// `seeds: N` is seed, seed + 1, ..., seed + N - 1; a list names them.
static std::vector<uint64_t> read_seeds(Section& top, uint64_t seed) {
  if (!top.has("seeds")) return {seed};
  if (top.is_list("seeds")) return top.unsigned_integers("seeds", kMaxSeeds);
  const int64_t n = top.integer("seeds", std::nullopt, Range::closed(1, kMaxSeeds));
  if (seed > std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(n - 1)) {
    top.fail("seeds", "seed + seeds - 1 is past 18446744073709551615: lower seed, or list the seeds");
  }
  std::vector<uint64_t> seeds;
  for (int64_t i = 0; i < n; ++i) seeds.push_back(seed + static_cast<uint64_t>(i));
  return seeds;
}

static Scenario read_scenario(Section& top, const std::string& path, const std::vector<Override>& platform_overrides) {
  Scenario s;
  s.file = path;
  s.name = top.identifier("name", fs::path(path).stem().string());
  s.seed = top.unsigned_integer("seed", 1);
  s.seeds = read_seeds(top, s.seed);
  s.timing_only = top.choice("numerics", {"full", "none"}, "full") == "none";
  if (s.timing_only) {
    s.simulator_only = top.error("numerics", "none is the simulator's timing-only mode; a real cluster trains for "
                                             "real: remove the key or set it to full for locosim-real");
  }
  if (s.seeds != std::vector<uint64_t>{s.seed} && !s.simulator_only) {
    s.simulator_only = top.error("seeds", "runs at several seeds are the simulator's (each seed a run of its own): "
                                          "on a real cluster, run locosim-real once per seed with seed: N");
  }
  s.platform = read_platform(top, platform_overrides);
  Section network = top.child("network", /*optional=*/true);
  s.network_model = parse_network_model(network);
  s.network = parse_network(network, s.platform);
  Section world = top.child("world", /*optional=*/true);
  s.world = parse_world(world, s.platform, s.seed);
  if (!s.world.empty() && !s.simulator_only) {
    s.simulator_only = top.error("world", "a changing world is the simulator's: on a real cluster hosts and links "
                                          "change by themselves; remove the section for locosim-real");
  }
  Section data = top.child("data", /*optional=*/true);
  s.data = read_data(data);
  Section model = top.child("model", /*optional=*/true);
  s.model = read_model(model);
  Section train = top.child("train", /*optional=*/true);
  s.train = TrainConfig::parse(train);
  check_activations_fit(train, s);

  // P_target up to 100 T parameters (10x the largest model trained so far), T up to 1e10 tokens per
  // worker per step: larger values only make every time and byte count absurd.
  Section timing = top.child("timing", /*optional=*/true);
  if (timing.has("params")) s.timing.params = timing.number("params", std::nullopt, Range::open_closed(0, 1e14));
  if (timing.has("tokens_per_step")) {
    s.timing.tokens_per_step = timing.number("tokens_per_step", std::nullopt, Range::open_closed(0, 1e10));
  }
  timing.finish();
  Section runtime = top.child("runtime", /*optional=*/true);
  s.threads = static_cast<int>(runtime.integer("threads", 1, Range::closed(1, 256)));
  s.device = runtime.text("device", "cpu");
  if (!valid_device_name(s.device)) {
    runtime.fail("device", "must be cpu, cuda or cuda:N (N a GPU index from 0 to 63), got '" + s.device + "'");
  }
  // Whether this machine has the GPU is asked where the run starts (scenario/device.hpp): a scenario
  // for GPU nodes is checked and submitted from a login node without one.
  s.device_at = runtime.error("device", "");
  runtime.finish();
  Section report = top.child("report", /*optional=*/true);
  if (report.text("link_bucket", "auto") != "auto") {
    s.link_bucket_s = report.quantity("link_bucket", Quantity::duration_s, std::nullopt,
                                      Range::closed(kMinLinkBucketS, kMaxLinkBucketS));
  }
  // trace.json holds a span per message: at thousands of workers, choose collectives or none.
  s.trace = report.choice("trace", {"messages", "collectives", "none"}, "messages");
  report.finish();

  std::vector<Section> listed = top.list("policies", "name");
  if (listed.empty()) top.fail("policies", "must list at least one policy (e.g. [ddp, diloco])");
  std::vector<Section> entries;  // as run: a tuned entry replaced by a copy per point of its grid
  std::set<std::string> labels;
  for (Section& entry : listed) {
    std::vector<Section::Variant> grid;
    if (entry.has("tune")) grid = entry.grid("tune", kMaxTunePoints);
    PolicySpec spec = parse_policy(entry);
    if (!labels.insert(spec.label).second) {
      entry.fail("label", "label '" + spec.label + "' is used twice; give each policy entry its own label");
    }
    if (grid.empty()) {
      s.policies.push_back(std::move(spec));
      entries.push_back(entry);
      continue;
    }
    if (s.data.validation_fraction <= 0) {
      entry.fail("tune", "choosing the best point needs a validation split, apart from the eval split the tables "
                         "report: set data.validation_fraction (e.g. 0.05)");
    }
    for (size_t i = 0; i < grid.size(); ++i) {
      grid[i].section.set_text("label", tuned_label(spec.label, grid[i].values, i));
      PolicySpec point = parse_policy(grid[i].section);
      if (!labels.insert(point.label).second) {
        entry.fail("tune", "the point labelled '" + point.label + "' has the label of another entry; relabel that one");
      }
      point.tuned_from = spec.label;
      point.tune_values = grid[i].values;
      s.policies.push_back(std::move(point));
      entries.push_back(grid[i].section);
    }
  }
  top.set_resolved_list("policies", entries);
  check_sync_periods(entries, s);
  check_async_policies(entries, s);
  if (top.has("sweep")) top.child("sweep");  // the grid is expanded before this (cli/sweep.cpp)
  top.finish();
  check_data_fits(top, s);
  s.resolved_yaml = top.resolved_yaml();
  return s;
}

// Puts the overrides in `top`'s tree, but for those under platform. when the platform is a file (after
// the others: `--set platform=other.yaml` chooses the file): those are returned, their keys relative
// to the platform file.
static std::vector<Override> apply_scenario_overrides(Section& top, const std::vector<Override>& overrides) {
  const auto in_platform = [](const Override& o) { return o.key.rfind("platform.", 0) == 0; };
  std::vector<Override> here, platform;
  for (const Override& o : overrides) (in_platform(o) ? platform : here).push_back(o);
  top.apply_overrides(here);
  if (top.is_mapping("platform")) {
    top.apply_overrides(platform);
    return {};
  }
  for (Override& o : platform) o.key = o.key.substr(std::string("platform.").size());
  return platform;
}

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides) {
  Section top = Section::load_file(path);
  const std::vector<Override> platform_overrides = apply_scenario_overrides(top, overrides);
  return read_scenario(top, path, platform_overrides);
}

Scenario load_scenario_text(const std::string& yaml, const std::string& path, const std::vector<Override>& overrides) {
  Section top = Section::load_string(yaml, path);
  const std::vector<Override> platform_overrides = apply_scenario_overrides(top, overrides);
  return read_scenario(top, path, platform_overrides);
}

bool valid_device_name(const std::string& name) {
  if (name == "cpu" || name == "cuda") return true;
  if (name.rfind("cuda:", 0) != 0 || name.size() < 6 || name.size() > 7) return false;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  if (name.size() == 7 && name[5] == '0') return false;  // "cuda:07"
  return cuda_device_index(name) <= kMaxDeviceIndex;
}

int cuda_device_index(const std::string& name) { return name == "cuda" ? -1 : std::stoi(name.substr(5)); }

}  // namespace locosim
