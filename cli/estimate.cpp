// RunEstimate: rows from the schedule, priced per row (see estimate.hpp).
#include "cli/estimate.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>

#include "algorithms/policies.hpp"
#include "algorithms/policy_registry.hpp"

namespace locosim {
namespace {

// Per events.csv row: the recorder's row, and its span in trace.json unless report.trace is none.
// The trace is streamed, so a span costs memory only as a pointer in its track. Measured on one core of
// a 2-core VM: a 1024-worker, 2-step DDP run with its trace (8.4M rows: 3.5 GB resident, 1.47 GB
// written, 62 s); the same at 512 workers with and without its trace (2.1M rows: 19 s and 11 s, 1.69
// and 1.67 GB); timing-only DiLoCo without a trace through a relay at 4096 workers x 100 rounds (4.1M
// rows, 15 s, 700 MB) and swarm-10k at 100 rounds (14.0M rows, 45 s, 413 MB of events.csv).
constexpr double kMemoryPerRow = 60;
constexpr double kMemoryPerSpan = 16;
constexpr double kDiskPerRow = 30;
constexpr double kDiskPerSpan = 140;
constexpr double kSecondsPerRow = 3.5e-6;
constexpr double kSecondsPerSpan = 4e-6;
constexpr double kBaseMemory = 300e6;         // the process itself: LibTorch, SimGrid, the corpus
constexpr double kRouteBytes = 200;           // per host: its routes to and from its star zone
// Per worker, timing only: its actor, transport, policy and optimizers on meta tensors (4096 workers, one
// round: 401 MB resident against 196 MB for 4 workers).
constexpr double kWorkerBytes = 50e3;
// Real LibTorch steps of the proxy model, one core: each worker's step costs its FLOPs at this rate plus
// LibTorch's cost per operation, which dominates for small models (per layer of the step). Fitted on one
// core of a loaded 2-core VM: quickstart's DiLoCo (4 workers x 300 steps of 8 x 64 tokens, tiny model)
// took 28.8 s, distro-consumer's (32 workers x 20 steps of 4 x 32 tokens) 10.8 s of simulation: 24 and
// 17 ms per worker-step. (The flat 5e9 FLOP/s this was priced them 3.5x over and 2x under.)
constexpr double kProxyFlopsPerSecond = 45e9;
constexpr double kStepSecondsPerLayer = 7e-3;
constexpr double kStateCopies = 10;           // parameters, gradients, Adam moments, outer copies, wire

// Trainable parameters of the proxy model, from its config (models/llama.cpp builds the same).
double proxy_params(const LlamaConfig& m) {
  const double d = static_cast<double>(m.d_model), L = static_cast<double>(m.n_layers);
  return static_cast<double>(m.vocab_size) * d + L * (4 * d * d + 3 * d * static_cast<double>(m.ffn_hidden_size()) + 2 * d) + d;
}

// Point-to-point messages in one of the policy's collectives among W workers (each message is a send
// row and a recv row), by the collective its rounds use and the scenario's algorithm for it
// (sim/collectives.hpp has each one's flows).
double messages_per_collective(const Scenario& s, const PolicySpec& policy, double W) {
  if (s.network.aggregated) return 2 * W;
  switch (policy.entry().collective(policy.config)) {
    case RoundCollective::server:
      return 2 * W;  // a push and its reply
    case RoundCollective::all_gather:
      return s.network.all_gather == AllGatherAlgorithm::relay ? W * W : W * (W - 1);
    case RoundCollective::all_reduce:
    case RoundCollective::subgroup_all_reduce:  // priced as if the group were everyone: an upper bound
      switch (s.network.all_reduce) {
        case AllReduceAlgorithm::relay:
          return 2 * W;  // up to the relay, the mean back down
        case AllReduceAlgorithm::hierarchical: {
          const double L = static_cast<double>(site_groups(s.platform).size());
          return 2 * (W - L) + 2 * L * (L - 1);  // members to their leader and back; the leaders' ring
        }
        case AllReduceAlgorithm::ring:
          return 2 * W * (W - 1);
      }
  }
  return 2 * W * (W - 1);
}

}  // namespace

RunEstimate estimate_policy_run(const Scenario& s, const PolicySpec& policy) {
  const double K = s.world_size() + (s.platform.relay ? 1 : 0);
  const double steps = static_cast<double>(s.train.steps);
  const auto period = sync_period(policy);
  const double collectives = period ? std::max(1.0, steps / static_cast<double>(period->second)) : steps;
  const double messages = messages_per_collective(s, policy, s.world_size());
  RunEstimate e;
  e.rows = K * steps * 2 + collectives * 2 * messages;  // compute and wait, then sends and receives

  const double P = proxy_params(s.model);
  const double tokens = static_cast<double>(s.train.batch_size * s.model.seq_len);
  const double step_flops = (6 * P + 12 * static_cast<double>(s.model.n_layers * s.model.d_model * s.model.seq_len)) * tokens;
  const double evals = steps / static_cast<double>(s.train.eval_every) + 1;
  const double eval_flops = evals * static_cast<double>(s.train.eval_batches) * step_flops / 3;  // forward only
  const double step_overhead_s = kStepSecondsPerLayer * static_cast<double>(s.model.n_layers);
  const double steps_overhead_s = (steps + evals * static_cast<double>(s.train.eval_batches) / 3) * step_overhead_s;
  const double activations = 20 * tokens * static_cast<double>(s.model.d_model * s.model.n_layers) * 4 +
                             2 * tokens * static_cast<double>(s.model.vocab_size) * 4;

  // Timing only: the parameters are shapes on the meta device, and no step or evaluation runs.
  const double real = s.timing_only ? 0.0 : 1.0;
  const double spans = s.trace == "none" ? 0.0 : 1.0;  // trace.json: a span per row
  e.memory_bytes = kBaseMemory + K * (kRouteBytes + kWorkerBytes) + real * (K * P * 4 * kStateCopies + activations) +
                   e.rows * (kMemoryPerRow + spans * kMemoryPerSpan);
  e.disk_bytes = e.rows * (kDiskPerRow + spans * kDiskPerSpan) + K * steps * 60 + 200 * (2 * K + 8) * 60;  // + metrics, links
  e.torch_seconds = real * K * ((steps * step_flops + eval_flops) / kProxyFlopsPerSecond + steps_overhead_s);
  e.seconds = e.rows * (kSecondsPerRow + spans * kSecondsPerSpan) + e.torch_seconds;
  return e;
}

MachineRoom machine_room(const std::string& output_root) {
  MachineRoom room;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit) {
    if (key == "MemAvailable:") room.memory_bytes = kb * 1024;
  }
  // The nearest existing folder on the way to the output root holds the file system it will use.
  std::filesystem::path p = std::filesystem::absolute(output_root);
  std::error_code ec;
  while (!std::filesystem::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct statvfs fs {};
  if (statvfs(p.c_str(), &fs) == 0) room.disk_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  return room;
}

std::string human_bytes(double bytes) {
  char buf[32];
  if (bytes >= 1e9) std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  else if (bytes >= 10e6) std::snprintf(buf, sizeof buf, "%.0f MB", bytes / 1e6);
  else if (bytes >= 1e6) std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  else std::snprintf(buf, sizeof buf, "%.0f kB", bytes / 1e3);  // never "0 MB"
  return buf;
}

std::string human_seconds(double s) {
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

std::string machine_time_range(const std::vector<RunEstimate>& runs, int jobs) {
  double total = 0, longest = 0;
  for (const auto& r : runs) {
    total += r.seconds;
    longest = std::max(longest, r.seconds);
  }
  const double at_once = static_cast<double>(std::max<size_t>(1, std::min(runs.size(), static_cast<size_t>(std::max(1, jobs)))));
  const double whole = std::max(longest, total / at_once);
  return human_seconds(whole / 2) + " to " + human_seconds(whole * 2);
}

std::string check_run_fits(const std::vector<RunEstimate>& runs, int jobs, const MachineRoom& room, bool force) {
  std::vector<double> memory;
  double disk = 0, seconds = 0;
  for (const auto& r : runs) {
    memory.push_back(r.memory_bytes);
    disk += r.disk_bytes;
    seconds += r.seconds;
  }
  std::sort(memory.begin(), memory.end(), std::greater<>());
  const size_t at_once = std::min(memory.size(), static_cast<size_t>(std::max(1, jobs)));
  double peak = 0;
  for (size_t i = 0; i < at_once; ++i) peak += memory[i];
  const double largest = memory.empty() ? 0 : memory.front();

  const std::string figures = "about " + human_bytes(peak) + " of memory (" + std::to_string(at_once) +
                              " simulation" + (at_once > 1 ? "s" : "") + " at once, the largest " +
                              human_bytes(largest) + "), " + human_bytes(disk) + " on disk and " +
                              human_seconds(seconds) + " of single-core time";
  // Memory past what is available brings the OOM killer, so the estimate refuses it. A full disk only
  // fails the run, cleanly (nothing half-written is kept), and the estimate is within about 2x: disk
  // refuses a run only when half its estimate would not fit, and warns when the whole might not.
  std::string problems, doubts;
  if (room.memory_bytes > 0 && peak > room.memory_bytes) {
    problems += "; the machine has " + human_bytes(room.memory_bytes) + " of memory available";
  }
  if (room.disk_bytes > 0 && disk / 2 >= room.disk_bytes) {
    problems += "; the output folder's disk has " + human_bytes(room.disk_bytes) + " free";
  } else if (room.disk_bytes > 0 && disk > room.disk_bytes) {
    doubts = "; the output folder's disk has " + human_bytes(room.disk_bytes) +
             " free, which may not be enough (a run that fills it fails, keeping nothing)";
  }
  if (!problems.empty() && !force) {
    throw std::invalid_argument("this run needs " + figures + problems +
                                ". Use fewer workers or steps, fewer simulations at once (-j), or --force to try anyway");
  }
  const bool large = peak > 2e9 || disk > 1e9 || seconds > 600;
  if (!problems.empty()) return "warning: --force: this run needs " + figures + problems + doubts;
  if (!doubts.empty()) return "warning: this run needs " + figures + doubts;
  return large ? "note: this run needs " + figures : "";
}

}  // namespace locosim
