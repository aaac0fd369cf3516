// RankEnv::from_environment and first_slurm_host (see rank_env.hpp).
#include "real/rank_env.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>

namespace locosim {
namespace {

// Far above any platform (at most 1024 hosts); bounds the store's rendezvous and the rank numbers.
constexpr int kMaxWorldSize = 100000;

constexpr const char* kConventions =
    "torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; or srun's SLURM_PROCID, SLURM_NTASKS; or use --spawn N";

// The integer in the environment variable `name`, which must lie in [lo, hi]; `fallback` when unset.
// Nothing is wrapped or clipped: MASTER_PORT=70000 is an error, not another port.
long long int_env(const char* name, long long lo, long long hi, std::optional<long long> fallback) {
  const char* value = std::getenv(name);
  if (!value) {
    if (fallback) return *fallback;
    throw std::invalid_argument(std::string(name) + " is not set (" + kConventions + ")");
  }
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(value, &end, 10);
  if (*value == '\0' || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
    throw std::invalid_argument(std::string(name) + " must be an integer in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "], got '" + value + "'");
  }
  return v;
}

void from_torchrun(RankEnv& env) {
  env.rank = static_cast<int>(int_env("RANK", 0, kMaxWorldSize - 1, std::nullopt));
  env.world_size = static_cast<int>(int_env("WORLD_SIZE", 1, kMaxWorldSize, std::nullopt));
  env.local_rank = static_cast<int>(int_env("LOCAL_RANK", 0, kMaxWorldSize - 1, env.rank));
}

void from_slurm(RankEnv& env) {
  env.launcher = "slurm";
  env.rank = static_cast<int>(int_env("SLURM_PROCID", 0, kMaxWorldSize - 1, std::nullopt));
  env.world_size = static_cast<int>(int_env("SLURM_NTASKS", 1, kMaxWorldSize, std::nullopt));
  env.local_rank = static_cast<int>(int_env("SLURM_LOCALID", 0, kMaxWorldSize - 1, env.rank));
  const char* nodes = std::getenv("SLURM_STEP_NODELIST");
  if (!nodes) nodes = std::getenv("SLURM_JOB_NODELIST");
  if (!nodes) throw std::invalid_argument("SLURM_STEP_NODELIST and SLURM_JOB_NODELIST are not set: is this an srun task?");
  try {
    env.master_addr = first_slurm_host(nodes);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("SLURM's node list '") + nodes + "': " + e.what());
  }
  // A port per (job, step) in [20000, 40000): below Linux's ephemeral range (32768 up) for most steps.
  const long long job = int_env("SLURM_JOB_ID", 0, INT64_MAX / 64, 0);
  const long long step = int_env("SLURM_STEP_ID", 0, 1LL << 32, 0);
  env.master_port = static_cast<int>(20000 + (job * 31 + step) % 12000);
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  std::string host;
  for (size_t i = 0; i < nodelist.size() && nodelist[i] != ',';) {
    if (nodelist[i] != '[') {
      host += nodelist[i++];
      continue;
    }
    const size_t close = nodelist.find(']', i);
    if (close == std::string::npos || close == i + 1) throw std::invalid_argument("a '[' without a range and its ']'");
    const std::string ranges = nodelist.substr(i + 1, close - i - 1);
    host += ranges.substr(0, ranges.find_first_of(",-"));  // the first number, its zero padding kept
    i = close + 1;
  }
  if (host.empty()) throw std::invalid_argument("names no host");
  return host;
}

RankEnv RankEnv::from_environment() {
  RankEnv env;
  if (!std::getenv("RANK") && std::getenv("SLURM_PROCID")) {
    from_slurm(env);
  } else {
    from_torchrun(env);
  }
  if (const char* addr = std::getenv("MASTER_ADDR")) env.master_addr = addr;
  env.master_port = static_cast<int>(int_env("MASTER_PORT", 1, 65535, env.master_port));  // 0 would pick a random port
  if (env.rank >= env.world_size) {
    const bool slurm = env.launcher == "slurm";
    throw std::invalid_argument(std::string(slurm ? "SLURM_PROCID" : "RANK") + " (" + std::to_string(env.rank) +
                                ") must be below " + (slurm ? "SLURM_NTASKS" : "WORLD_SIZE") + " (" +
                                std::to_string(env.world_size) + ")");
  }
  return env;
}

}  // namespace locosim
