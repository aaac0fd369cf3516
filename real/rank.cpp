// run_rank: rendezvous, train, gather every rank's rows to rank 0, write the run folder.
#include "real/rank.hpp"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/serialize.h>
#include <torch/utils.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>
#include <type_traits>

#include "algorithms/train_loop.hpp"
#include "scenario/device.hpp"
#include "scenario/worker.hpp"
#include "real/auth_store.hpp"
#include "real/heartbeat.hpp"
#include "real/relay.hpp"
#include "real/store_format.hpp"
#include "real/store_server.hpp"
#include "report/link_report.hpp"
#include "report/output_file.hpp"
#include "report/recorder_csv.hpp"
#include "report/resume.hpp"
#include "report/run_folder.hpp"
#include "report/summary.hpp"
#include "report/run_files.hpp"
#include "report/trace.hpp"

namespace locosim {
namespace fs = std::filesystem;

namespace {

// Rows travel to rank 0 through the store as raw bytes (real/store_format.hpp: the row structs are
// plain data).
static_assert(std::is_trivially_copyable_v<WorkTally>, "tallies travel as bytes");

// Each rank but 0 streams its rows to the store as it goes (at most every 250 ms, and at the end):
// rank 0 then has the rows of a rank lost mid-run up to where it died. Chunk i is "rows/<r>/<i>":
// [metric count, event count, the tally at that point, the new metric rows, the new event rows];
// "rows/<r>/chunks" says how many are complete. A rank restarted mid-run (a second life) goes on
// after its first life's chunks; each chunk says which life it is from ("rows/<r>/lives" counts them).
class RowStream {
 public:
  RowStream(c10::intrusive_ptr<c10d::Store> store, int rank) : store_(std::move(store)), rank_(rank) {
    if (rank_ == 0) return;
    const std::string prefix = "rows/" + std::to_string(rank_) + "/";
    life_ = store_->add(prefix + "lives", 1) - 1;
    if (store_->check({prefix + "chunks"})) chunks_ = from_bytes<int64_t>(store_->get(prefix + "chunks")).at(0);
  }

  void maybe_flush(const Recorder& recorder, const WorkTally& tally) {
    if (std::chrono::steady_clock::now() - last_ >= std::chrono::milliseconds(250)) flush(recorder, tally);
  }

  void flush(const Recorder& recorder, const WorkTally& tally) {
    const std::vector<MetricRow> metrics(recorder.metrics().begin() + metrics_sent_, recorder.metrics().end());
    const std::vector<EventRow> events(recorder.events().begin() + events_sent_, recorder.events().end());
    std::vector<uint8_t> blob = to_bytes(std::vector<int64_t>{static_cast<int64_t>(metrics.size()),
                                                              static_cast<int64_t>(events.size()), life_});
    for (auto part : {to_bytes(std::vector<WorkTally>{tally}), to_bytes(metrics), to_bytes(events)}) {
      blob.insert(blob.end(), part.begin(), part.end());
    }
    const std::string prefix = "rows/" + std::to_string(rank_) + "/";
    store_->set(prefix + std::to_string(chunks_), blob);
    store_->set(prefix + "chunks", to_bytes(std::vector<int64_t>{++chunks_}));
    metrics_sent_ += metrics.size();
    events_sent_ += events.size();
    last_ = std::chrono::steady_clock::now();
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int64_t chunks_ = 0;
  int64_t life_ = 0;
  size_t metrics_sent_ = 0, events_sent_ = 0;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// What rank `rank` streamed (RowStream): its rows into `merged`; the last tally of each of its
// lives (index: life), for those that sent any.
std::vector<std::optional<WorkTally>> read_rows(c10d::Store& store, int rank, Recorder& merged) {
  const std::string prefix = "rows/" + std::to_string(rank) + "/";
  std::vector<std::optional<WorkTally>> tallies;
  if (!store.check({prefix + "chunks"})) return tallies;
  const auto counted = from_bytes<int64_t>(store.get(prefix + "chunks"));
  if (counted.size() != 1 || counted[0] < 0 || counted[0] > 10000000) {
    throw std::runtime_error("rank " + std::to_string(rank) + "'s row count in the store is malformed");
  }
  const int64_t chunks = counted[0];
  for (int64_t i = 0; i < chunks; ++i) {
    const std::string key = prefix + std::to_string(i);
    const std::vector<uint8_t> blob = store.get(key);
    // A chunk's counts come from the network: they must describe exactly the bytes that came.
    const size_t head = 3 * sizeof(int64_t);
    const auto counts = from_bytes<int64_t>(std::vector<uint8_t>(blob.begin(), blob.begin() + std::min(head, blob.size())));
    const bool whole = counts.size() == 3 && counts[0] >= 0 && counts[1] >= 0 && counts[2] >= 0 && counts[2] < 1000000 &&
                       static_cast<uint64_t>(counts[0]) <= blob.size() / sizeof(MetricRow) &&
                       static_cast<uint64_t>(counts[1]) <= blob.size() / sizeof(EventRow) &&
                       head + sizeof(WorkTally) + counts[0] * sizeof(MetricRow) + counts[1] * sizeof(EventRow) == blob.size();
    if (!whole) {
      throw std::runtime_error("rank " + std::to_string(rank) + "'s rows in the store (" + key + ", " +
                               std::to_string(blob.size()) + " bytes) are malformed");
    }
    auto at = blob.begin() + head;
    auto take = [&](size_t bytes) {
      std::vector<uint8_t> part(at, at + static_cast<std::ptrdiff_t>(bytes));
      at += static_cast<std::ptrdiff_t>(bytes);
      return part;
    };
    const auto life = static_cast<size_t>(counts[2]);
    if (tallies.size() <= life) tallies.resize(life + 1);
    tallies[life] = from_bytes<WorkTally>(take(sizeof(WorkTally))).at(0);
    for (const auto& row : from_bytes<MetricRow>(take(counts[0] * sizeof(MetricRow)))) merged.metric(row);
    for (const auto& row : from_bytes<EventRow>(take(counts[1] * sizeof(EventRow)))) merged.event(row);
  }
  return tallies;
}

// Waits (rank 0) until every rank in `ranks` has set "<prefix><rank>" or fallen silent; returns
// the silent ones (lost after their last collective: nothing else would notice).
std::vector<int> wait_for_keys(c10d::Store& store, const std::string& prefix, const std::vector<int>& ranks,
                               const Heartbeat& heartbeat, std::chrono::milliseconds watch) {
  std::vector<int> pending = ranks, silent;
  while (!pending.empty()) {
    std::vector<int> still;
    for (int r : pending) {
      if (store.check({prefix + std::to_string(r)})) continue;
      if (heartbeat.silent(r, watch)) {
        silent.push_back(r);
      } else {
        still.push_back(r);
      }
    }
    pending = std::move(still);
    if (!pending.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return silent;
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const RankEnv& env) {
  if (const char* ifname = std::getenv("LOCOSIM_GLOO_IFNAME")) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// What became of the group: the ranks lost and the work the run kept and threw away.
struct Outcome {
  RunTally tally;
  std::vector<ServerUpdate> updates;  // the parameter server's (asynchronous policies), in order
  std::vector<double> validation_losses;  // of the finished ranks, in rank order (with a validation split)
};

}  // namespace

std::string real_program(ReduceMode reduce) {
  return std::string("locosim-real --reduce ") + (reduce == ReduceMode::exact ? "exact" : "native");
}

namespace {

void write_run_folder(const Scenario& scenario, const PolicySpec& policy, const Recorder& merged,
                      const std::string& fingerprint, const Outcome& outcome, const RealOptions& options) {
  const fs::path root = child_path(options.output_root, scenario.name);
  claim_folder(root);
  remove_stale_temporaries(root);
  StagedFolder staged(child_path(root, policy.label));
  const fs::path temp = staged.path();
  write_run_identity(temp.string(), scenario, policy, real_program(options.reduce), run_hash(scenario, policy));
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
  // A parameter server's updates (asynchronous policies): the real backend knows it had one by its updates.
  const std::vector<ServerUpdate>* updates = outcome.updates.empty() ? nullptr : &outcome.updates;
  RunSummary summary = summarize_run(scenario, policy, merged, outcome.tally, updates);
  summary.params_fingerprint = fingerprint;
  summary.final_validation_loss = final_validation_loss(scenario, outcome.validation_losses);
  write_run_results(temp.string(), scenario, merged, links, names, updates, summary);
  staged.commit();
}

// Where rank 0's servers listen: LOCOSIM_BIND_ADDR if set (a cluster whose MASTER_ADDR resolves to a
// loopback address on its own host), else MASTER_ADDR itself: never every interface unasked.
std::string bind_address(const RankEnv& env) {
  const char* bind = std::getenv("LOCOSIM_BIND_ADDR");
  return bind && *bind ? bind : env.master_addr;
}

// How long a rank's heartbeat must stay still before the others count it lost: long enough that a
// loaded machine's stalls are not taken for a loss, short against the collective timeout.
std::chrono::milliseconds watch_window(const RealOptions& options) {
  return std::chrono::milliseconds(std::clamp<int64_t>(1000LL * options.timeout_s / 6, 2000, 10000));
}

}  // namespace

StoreLimits store_limits(const Scenario& scenario, int world_size) {
  StoreLimits limits;
  limits.max_frame_bytes = static_cast<uint32_t>(std::min<uint64_t>((16u << 20) + 8 * model_bytes(scenario), UINT32_MAX - 1));
  limits.max_total_bytes = (1ull << 30) + static_cast<uint64_t>(world_size + 2) * limits.max_frame_bytes;
  return limits;
}

uint64_t relay_max_frame_bytes(const Scenario& scenario) { return (1u << 20) + 16 * model_bytes(scenario); }

uint64_t model_bytes(const Scenario& scenario) {
  return 4 * static_cast<uint64_t>(TinyLlama(scenario.model)->num_params());
}

void run_rank(const Scenario& scenario, const PolicySpec& policy, const RankEnv& env, const RealOptions& options) {
  // A write to a lost peer's socket must fail (and the group re-form), not kill this rank.
  std::signal(SIGPIPE, SIG_IGN);
  const torch::Device device = training_device(scenario, env.local_rank);  // refused before meeting the group
  const auto timeout = std::chrono::milliseconds(1000LL * options.timeout_s);
  const auto watch = watch_window(options);
  const StoreLimits limits = store_limits(scenario, env.world_size);
  // Rank 0 hosts the job's store (only holders of the job's secret get in); every rank, rank 0 too,
  // talks to it as a client.
  std::unique_ptr<StoreServer> store_server;
  if (env.rank == 0) {
    StoreServerOptions served;
    served.address = bind_address(env);
    served.port = static_cast<uint16_t>(env.master_port);
    served.world_size = env.world_size;
    served.limits = limits;
    served.frame_timeout = timeout;
    store_server = std::make_unique<StoreServer>(served, options.secret);
  }
  auto connect = [&env, timeout, limits, secret = options.secret] {
    return c10::intrusive_ptr<c10d::Store>(c10::make_intrusive<AuthStore>(
        env.master_addr, static_cast<uint16_t>(env.master_port), secret, env.rank, env.world_size, timeout, limits));
  };
  auto store = connect();
  // A rank started while the job runs (rank 0 formed the group already) was restarted: it rejoins.
  const bool rejoin = env.rank != 0 && job_in_progress(*store);
  std::shared_ptr<Heartbeat> heartbeat;
  auto start_heartbeat = [&] {
    heartbeat = std::make_shared<Heartbeat>(connect(), env.rank, env.world_size);
  };
  // A joiner beats only once it is out of the group: beating earlier, it would not look lost.
  if (!rejoin) start_heartbeat();

  RunStart start = start_run(scenario);
  TinyLlama model = start.initial;  // the same initial weights on every rank (and as the simulator)
  model->to(device);
  Recorder recorder;
  C10dJob job{store, env.rank, env.world_size, gloo_device(env), timeout, heartbeat, watch};
  job.joining = rejoin;
  job.connect = connect;
  if (!options.relay.empty()) {
    job.relay = std::make_shared<RelayClient>(options.relay, env.rank, env.world_size, options.secret,
                                              relay_max_frame_bytes(scenario), timeout);
  } else if (env.rank == 0 && scenario.network.all_gather == AllGatherAlgorithm::relay) {
    std::fprintf(stderr, "locosim-real: the scenario's all-gathers go through a relay, but no --relay was given: "
                 "they use Gloo's all-gather instead (start one with locosim-real --serve-relay; --spawn does)\n");
  }
  C10dTransport transport(std::move(job), options.reduce, recorder);
  Worker worker = build_worker(scenario, policy, env.rank, start, model, model->parameters(), transport, recorder);
  Policy& policy_impl = *worker.policy;
  TrainLoop& loop = *worker.loop;
  loop.on_handover_point = [&](int64_t steps_done) {
    transport.handover_point(steps_done, [&] { return saved_state(policy_impl); });
  };
  int64_t first_step = 0;
  if (rejoin) {
    if (!policy_impl.handover_ready()) {
      std::fprintf(stderr, "locosim-real: rank %d: the job is under way and policy '%s' does not take workers back "
                   "(it never hands its state over); exiting\n", env.rank, policy.label.c_str());
      return;
    }
    std::fprintf(stderr, "locosim-real: rank %d: the job is under way; rejoining at the group's next handover point\n",
                 env.rank);
    std::optional<C10dTransport::Admission> admission;
    if (wait_until_out(*store, env.rank)) {
      start_heartbeat();
      transport.watch_with(heartbeat);
      admission = transport.await_admission();
    }
    if (!admission) {
      std::fprintf(stderr, "locosim-real: rank %d: the job ended before the group took it back\n", env.rank);
      return;
    }
    load_state(policy_impl, admission->state, device);  // the sender's tensors onto this rank's device
    recorder.event({env.rank, EventKind::join, admission->download_start_s, admission->download_end_s,
                    state_tensor_bytes(admission->state) * start.wire_scale, 0});
    transport.enter(*admission);
    recorder.event({env.rank, EventKind::away, admission->lost_at_s, transport.now_s(), 0, -1});
    first_step = admission->steps_done;
  }
  RowStream rows(store, env.rank);
  if (env.rank != 0) recorder.on_metric = [&](const MetricRow&) { rows.maybe_flush(recorder, loop.tally()); };

  try {
    loop.run(first_step);
  } catch (const std::exception& e) {
    const int64_t step = recorder.metrics().empty() ? 1 : recorder.metrics().back().step + 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // for the heartbeats to tell
    const std::string lost = heartbeat->silent_ranks(std::chrono::milliseconds(1000));
    throw std::runtime_error("rank " + std::to_string(env.rank) + ": step " + std::to_string(step) +
                             ": a collective failed" + (lost.empty() ? "" : ": lost " + lost) + " (timeout " +
                             std::to_string(options.timeout_s) + " s): " + std::string(e.what()).substr(0, 500));
  }
  recorder.on_metric = nullptr;
  // With a validation split, each rank scores its final model on it, after the clock (as the simulator).
  const double validation = scenario.data.validation_fraction > 0 ? loop.evaluate_on(Split::validation) : 0;

  if (env.rank != 0) {
    rows.flush(recorder, loop.tally());
    store->set("final/" + std::to_string(env.rank), to_bytes(std::vector<double>{validation}));
    store->wait({"written"});
    store->set("left/" + std::to_string(env.rank), {1});
    return;
  }
  // Rank 0: its parameter server's last replies, then the rows of every rank, survivors' to the end,
  // the lost ones' up to where they died.
  std::vector<ServerUpdate> updates = transport.stop_server();
  std::vector<int> others;
  for (int r : transport.members()) {
    if (r != 0) others.push_back(r);
  }
  std::vector<C10dTransport::Loss> lost = transport.lost();
  for (int r : wait_for_keys(*store, "final/", others, *heartbeat, watch)) {
    lost.push_back({r, transport.now_s()});  // lost after the last collective
    others.erase(std::find(others.begin(), others.end(), r));
  }
  Recorder merged;
  // Per rank, the last tally of each of its lives (a rank restarted mid-run has two or more).
  std::vector<std::vector<std::optional<WorkTally>>> tallies(env.world_size);
  for (int r = 0; r < env.world_size; ++r) {
    if (r == 0) {
      for (const auto& row : recorder.metrics()) merged.metric(row);
      for (const auto& row : recorder.events()) merged.event(row);
      tallies[0] = {loop.tally()};
    } else {
      tallies[r] = read_rows(*store, r, merged);
    }
  }
  Outcome outcome;
  outcome.updates = std::move(updates);
  // The finished ranks' validation losses, in rank order (others: those that set their final key).
  std::sort(others.begin(), others.end());
  outcome.validation_losses.push_back(validation);
  for (int r : others) {
    const auto loss = from_bytes<double>(store->get("final/" + std::to_string(r)));
    if (loss.size() != 1 || !std::isfinite(loss[0])) {
      throw std::runtime_error("rank " + std::to_string(r) + "'s final validation loss in the store is malformed");
    }
    outcome.validation_losses.push_back(loss[0]);
  }
  outcome.tally.workers_lost = static_cast<int>(lost.size());
  outcome.tally.workers_joined = static_cast<int>(transport.joined().size());
  for (const auto& lives : tallies) {
    for (const auto& tally : lives) {
      if (!tally) continue;
      outcome.tally.useful_tokens += tally->tokens_committed;
      outcome.tally.compute_wasted_s += tally->compute_wasted_s;
    }
  }
  double end_s = transport.now_s();
  for (const auto& row : merged.metrics()) end_s = std::max(end_s, row.time_s);
  std::vector<size_t> losses_of(env.world_size, 0);
  for (const auto& loss : lost) {
    // The work since its last committed sync went with it (as far as its last rows tell: what it
    // did after them is not known), and it was away from when the survivors noticed to the end —
    // or until it was taken back (then the joiner recorded the away itself).
    const size_t life = losses_of[loss.rank]++;
    if (life < tallies[loss.rank].size() && tallies[loss.rank][life]) {
      const WorkTally& tally = *tallies[loss.rank][life];
      outcome.tally.compute_wasted_s += tally.compute_pending_s;
      merged.event({loss.rank, EventKind::discard, std::min(tally.pending_since_s, loss.noticed_s), loss.noticed_s, 0, -1});
    }
    bool came_back = false;
    for (const auto& j : transport.joined()) came_back |= j.rank == loss.rank && j.admitted_s >= loss.noticed_s;
    if (!came_back) merged.event({loss.rank, EventKind::away, loss.noticed_s, end_s, 0, -1});
  }
  write_run_folder(scenario, policy, merged, params_fingerprint(model->parameters()), outcome, options);
  // The store lives in rank 0: it stays until every rank left has seen that the folder is written.
  store->set("written", {1});
  (void)wait_for_keys(*store, "left/", others, *heartbeat, watch);
}

}  // namespace locosim
