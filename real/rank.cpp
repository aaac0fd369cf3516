// run_rank: rendezvous, train, gather every rank's rows to rank 0, write the run folder.
#include "real/rank.hpp"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/utils.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "report/link_report.hpp"
#include "report/output_file.hpp"
#include "report/recorder_csv.hpp"
#include "report/run_folder.hpp"
#include "report/summary.hpp"
#include "report/trace.hpp"

namespace locosim {
namespace fs = std::filesystem;

namespace {

// The integer in the environment variable `name`, which must lie in [lo, hi]; `fallback` when unset.
// Nothing is wrapped or clipped: MASTER_PORT=70000 is an error, not another port.
int int_env(const char* name, int lo, int hi, std::optional<int> fallback) {
  const char* value = std::getenv(name);
  if (!value) {
    if (fallback) return *fallback;
    throw std::invalid_argument(std::string(name) + " is not set (torchrun convention: RANK, WORLD_SIZE, "
                                "MASTER_ADDR, MASTER_PORT; or use --spawn N)");
  }
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
    throw std::invalid_argument(std::string(name) + " must be an integer in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "], got '" + value + "'");
  }
  return static_cast<int>(v);
}

// Rows travel to rank 0 through the store as raw bytes (the row structs are plain data).
template <class Row>
std::vector<uint8_t> to_bytes(const std::vector<Row>& rows) {
  std::vector<uint8_t> bytes(rows.size() * sizeof(Row));
  if (!rows.empty()) std::memcpy(bytes.data(), rows.data(), bytes.size());
  return bytes;
}

template <class Row>
std::vector<Row> from_bytes(const std::vector<uint8_t>& bytes) {
  std::vector<Row> rows(bytes.size() / sizeof(Row));
  if (!rows.empty()) std::memcpy(rows.data(), bytes.data(), rows.size() * sizeof(Row));
  return rows;
}

// Every 100 ms, each rank bumps its counter "beat/<rank>" in the store; after a failure the survivors
// watch the counters for a second to name the rank that stopped. Counters, not timestamps, so that
// clock skew between machines cannot mislead.
class Heartbeat {
 public:
  Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank) : store_(std::move(store)), rank_(rank) {
    thread_ = std::thread([this] {
      for (int64_t beat = 1; !stop_; ++beat) {
        try {
          store_->set("beat/" + std::to_string(rank_), to_bytes(std::vector<int64_t>{beat}));
        } catch (...) {
          return;  // the store's host is gone; the training loop will report it
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  ~Heartbeat() {
    stop_ = true;
    thread_.join();
  }

  // The other ranks whose counter does not move for `watch`, as "rank 2, rank 3"; "rank 0 (its store
  // is unreachable)" when the store itself is gone.
  std::string silent_ranks(int world_size, std::chrono::milliseconds watch) {
    try {
      std::vector<int64_t> before = beats(world_size);
      std::this_thread::sleep_for(watch);
      std::vector<int64_t> after = beats(world_size);
      std::string out;
      for (int r = 0; r < world_size; ++r) {
        if (r != rank_ && after[r] == before[r]) out += (out.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r);
      }
      return out;
    } catch (...) {
      return rank_ == 0 ? "" : "rank 0 (its store is unreachable)";
    }
  }

 private:
  std::vector<int64_t> beats(int world_size) {
    std::vector<int64_t> out(world_size, 0);
    for (int r = 0; r < world_size; ++r) {
      const std::string key = "beat/" + std::to_string(r);
      if (store_->check({key})) out[r] = from_bytes<int64_t>(store_->get(key))[0];  // get() blocks on absent keys
    }
    return out;
  }

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::shared_ptr<::gloo::transport::Device> gloo_device(const RankEnv& env) {
  if (const char* ifname = std::getenv("LOCOSIM_GLOO_IFNAME")) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

void write_run_folder(const Scenario& scenario, const PolicySpec& policy, const Recorder& merged,
                      const std::string& fingerprint, const RealOptions& options) {
  const fs::path root = child_path(options.output_root, scenario.name);
  claim_folder(root);
  remove_stale_temporaries(root);
  StagedFolder staged(child_path(root, policy.label));
  const fs::path temp = staged.path();
  write_text_file((temp / "resolved.yaml").string(),
                  "# locosim-real run of policy '" + policy.label + "'\n" + scenario.resolved_yaml);
  write_metrics_csv(merged, (temp / "metrics.csv").string());
  write_events_csv(merged, (temp / "events.csv").string());
  // The real backend sees no links: each worker's traffic is charged to its own access links.
  std::vector<std::string> hosts, names;
  std::vector<double> up_bps, down_bps;
  double end_s = 0;
  for (const auto& row : merged.metrics()) end_s = std::max(end_s, row.time_s);
  for (int rank = 0; rank < scenario.world_size(); ++rank) {
    const HostSpec& host = scenario.platform.hosts[rank];
    hosts.push_back(host.name);
    names.push_back("rank " + std::to_string(rank) + " (" + host.name + ")");
    up_bps.push_back(host.uplink.bandwidth_bps);
    down_bps.push_back(host.downlink.bandwidth_bps);
  }
  const LinkReport links = links_from_events(merged, hosts, up_bps, down_bps, scenario.link_bucket_s, end_s);
  write_links_csv(links, (temp / "links.csv").string());
  write_trace_json(merged, names, &links, (temp / "trace.json").string());
  RunSummary summary = summarize(merged, scenario.world_size(), scenario.train.target_loss);
  summary.useful_tokens = summary.tokens;  // no member is ever lost here: every token is kept
  set_goodput(summary);
  summary.label = policy.label;
  summary.policy = policy.name;
  summary.params_fingerprint = fingerprint;
  write_summary_json(summary, (temp / "summary.json").string());
  staged.commit();
}

}  // namespace

RankEnv RankEnv::from_environment() {
  // Far above any platform (at most 1024 hosts); bounds the store's rendezvous and the rank numbers.
  constexpr int kMaxWorldSize = 100000;
  RankEnv env;
  env.rank = int_env("RANK", 0, kMaxWorldSize - 1, std::nullopt);
  env.world_size = int_env("WORLD_SIZE", 1, kMaxWorldSize, std::nullopt);
  env.local_rank = int_env("LOCAL_RANK", 0, kMaxWorldSize - 1, env.rank);
  env.master_port = int_env("MASTER_PORT", 1, 65535, 29500);  // a TCP port; 0 would pick a random one
  if (const char* addr = std::getenv("MASTER_ADDR")) env.master_addr = addr;
  if (env.world_size < 1 || env.rank >= env.world_size) {
    throw std::invalid_argument("RANK (" + std::to_string(env.rank) + ") must be below WORLD_SIZE (" +
                                std::to_string(env.world_size) + ")");
  }
  return env;
}

void run_rank(const Scenario& scenario, const PolicySpec& policy, const RankEnv& env, const RealOptions& options) {
  const auto timeout = std::chrono::milliseconds(1000LL * options.timeout_s);
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(env.master_port);
  store_options.isServer = env.rank == 0;
  store_options.numWorkers = env.world_size;
  store_options.timeout = timeout;
  auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
  gloo_options->devices.push_back(gloo_device(env));
  auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, gloo_options);

  torch::set_num_threads(scenario.threads);
  Corpus corpus = Corpus::from_file(scenario.data.path, scenario.data.eval_fraction);
  torch::manual_seed(scenario.seed);
  TinyLlama model(scenario.model);  // the same initial weights on every rank (and as the simulator)
  Recorder recorder;
  C10dTransport transport(group, options.reduce, recorder);
  PolicyContext ctx{model->parameters(), &transport, scenario.train.optimizer, scenario.train.steps,
                    wire_scale(scenario, *model)};
  std::unique_ptr<Policy> policy_impl = make_policy(policy, std::move(ctx));
  Shard shard(corpus, env.rank, env.world_size, scenario.data.split, static_cast<int>(scenario.model.seq_len),
              scenario.seed);
  TrainLoop loop(model, std::move(shard), corpus, *policy_impl, transport, scenario.train,
                 flops_per_step(scenario, *model), recorder);

  Heartbeat heartbeat(store, env.rank);
  try {
    loop.run();
  } catch (const std::exception& e) {
    const int64_t step = recorder.metrics().empty() ? 1 : recorder.metrics().back().step + 1;
    const std::string lost = heartbeat.silent_ranks(env.world_size, std::chrono::milliseconds(1500));
    throw std::runtime_error("rank " + std::to_string(env.rank) + ": step " + std::to_string(step) +
                             ": a collective failed" + (lost.empty() ? "" : ": lost " + lost) + " (timeout " +
                             std::to_string(options.timeout_s) + " s): " + std::string(e.what()).substr(0, 300));
  }

  store->set("metrics/" + std::to_string(env.rank), to_bytes(recorder.metrics()));
  store->set("events/" + std::to_string(env.rank), to_bytes(recorder.events()));
  if (env.rank == 0) {
    Recorder merged;
    for (int r = 0; r < env.world_size; ++r) {
      for (const auto& row : from_bytes<MetricRow>(store->get("metrics/" + std::to_string(r)))) merged.metric(row);
      for (const auto& row : from_bytes<EventRow>(store->get("events/" + std::to_string(r)))) merged.event(row);
    }
    write_run_folder(scenario, policy, merged, params_fingerprint(model->parameters()), options);
    // The store lives in rank 0: it stays until every rank has seen that the folder is written.
    store->set("written", {1});
    for (int r = 1; r < env.world_size; ++r) store->wait({"left/" + std::to_string(r)});
  } else {
    store->wait({"written"});
    store->set("left/" + std::to_string(env.rank), {1});
  }
}

}  // namespace locosim
