// spawn_local_ranks: a process per rank (exec of locosim-real) in a ChildPool, then wait for all and
// report the lost.
#include "real/launcher.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "report/child_pool.hpp"
#include "report/stop_signals.hpp"

namespace locosim {
namespace {

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("cannot find a free port on 127.0.0.1");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

int spawn_local_ranks(int n, const std::string& program, const std::vector<std::string>& args, int grace_s,
                      const JobSecret& secret) {
  const std::string secret_hex = secret.hex();
  const std::string port = std::to_string(free_port());
  StopSignals stop_signals;
  ChildPool ranks;
  std::map<pid_t, int> rank_of;
  for (int rank = 0; rank < n; ++rank) {
    const pid_t pid = ranks.start("rank " + std::to_string(rank), [&] {
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", port.c_str(), 1);
      setenv(kJobSecretVariable, secret_hex.c_str(), 1);
      setenv("LOCOSIM_SPAWNED", "1", 1);  // the launcher prints the table, not its rank 0
      unsetenv("LOCOSIM_BIND_ADDR");  // the ranks' servers listen on 127.0.0.1, where they meet
      std::vector<char*> argv = {const_cast<char*>(program.c_str())};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(program.c_str(), argv.data());
      std::perror("locosim-real: exec");
      std::_Exit(127);
    });
    rank_of[pid] = rank;
  }

  // failed: rank 0 failed (or a stop signal came): the others are stopped after the grace period.
  bool failed = false, killed = false;
  int stop_signal = 0;
  std::chrono::steady_clock::time_point deadline;
  while (!ranks.empty()) {
    if (!stop_signal && (stop_signal = StopSignals::received())) {
      ranks.signal_all(SIGTERM);
      failed = true;
      grace_s = 5;
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace_s);
    }
    if (failed && !killed && std::chrono::steady_clock::now() > deadline) {  // the others' time is up
      ranks.kill_all([&](pid_t pid) {
        std::fprintf(stderr, "locosim-real: rank %d did not stop %d s after %s; killing it\n", rank_of.at(pid), grace_s,
                     stop_signal ? "SIGTERM" : "rank 0 failed");
      });
      killed = true;
    }
    for (const auto& [pid, status] : ranks.wait(std::chrono::milliseconds(50))) {
      const int rank = rank_of.at(pid);
      if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || stop_signal) continue;
      if (rank != 0 && !failed) {
        // Lost: the others re-form the group without it (if rank 0 fails too, the run fails then).
        std::fprintf(stderr, "locosim-real: rank %d %s; the others went on without it\n", rank,
                     describe_exit(status).c_str());
        continue;
      }
      std::fprintf(stderr, "locosim-real: rank %d %s\n", rank, describe_exit(status).c_str());
      failed = true;
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace_s);
    }
  }
  if (stop_signal) throw Interrupted(stop_signal);
  return failed ? 1 : 0;
}

}  // namespace locosim
