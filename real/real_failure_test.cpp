// The real backend when a rank dies: a rank killed mid-run is left behind and the others re-form the
// group and finish, except rank 0 (the store's host), whose loss fails the run clearly; a killed rank
// started again rejoins. real_test.cpp has the parity with the simulator.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::testing;
namespace fs = std::filesystem;

// A scenario of 4 ranks (the small one's hosts, twice over) and `steps` steps.
static std::string four_ranks_yaml(int steps) {
  std::string yaml = replaced(small_scenario_yaml(), "steps: 12", "steps: " + std::to_string(steps));
  const std::string slow = "    - {name: slow, accelerator: gpu, uplink: {bandwidth: 10 Mbps, latency: 20 ms}, downlink: "
                           "{bandwidth: 100 Mbps, latency: 20 ms}}\n";
  std::string more = slow;
  for (const char* name : {"slow2", "slow3"}) more += replaced(slow, "name: slow", std::string("name: ") + name);
  yaml = replaced(yaml, slow, more);
  return yaml + "  - {name: fedavg, inner_steps: 4}\n";
}

// The process running `yaml` as rank `rank` (RANK and LOCAL_RANK in its environment), once it has
// appeared (60 s at most); -1 if it never does.
static pid_t find_rank(const std::string& yaml, int rank) {
  const std::string rank_var = "RANK=" + std::to_string(rank) + std::string(1, '\0');
  const std::string local_var = "LOCAL_RANK=" + std::to_string(rank);
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& p : fs::directory_iterator("/proc")) {
      std::string cmdline = read_file(p.path().string() + "/cmdline");
      std::string env = read_file(p.path().string() + "/environ");
      if (cmdline.find(yaml) != std::string::npos && env.find(rank_var) != std::string::npos &&
          env.find(local_var) != std::string::npos) {
        return std::stoi(p.path().filename().string());
      }
    }
  }
  return -1;
}

// Whether the process still runs (not gone, not a zombie waiting for its parent).
static bool running(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// Bytes the process has written so far (/proc/<pid>/io's wchar): a rank writes nothing but its
// collectives' sends through Gloo's sockets (and a few bytes to the store) before its run ends.
static double bytes_written(pid_t pid) {
  std::istringstream io(read_file("/proc/" + std::to_string(pid) + "/io"));
  for (std::string key, value; io >> key >> value;) {
    if (key == "wchar:") return std::stod(value);
  }
  return -1;
}

// SIGKILL once the process has sent 8 MB (the small model's all-reduce is about 1.4 MB a rank: some 6
// collectives, so it is training, past the rendezvous, on a fast machine or a slow one alike) and
// half a second more (a rank streams its rows to the store at most every 250 ms: rows of its life
// before the kill reach the run folder), or after 2 min. Fails the test if the process ended first
// (its run was too short) or its bytes cannot be read.
static void kill_once_training(pid_t pid) {
  REQUIRE_MESSAGE(bytes_written(pid) >= 0, "cannot read /proc/" << pid << "/io");
  for (int i = 0; i < 6000 && running(pid) && bytes_written(pid) < 8e6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  REQUIRE_MESSAGE(running(pid), "the rank ended before it had sent 8 MB and trained half a second more: lengthen the test's run");
  kill(pid, SIGKILL);
}

// Runs `locosim-real <yaml> -p <policy> --spawn 4` in `dir` (stdout and stderr to out.txt and
// err.txt), kills rank `victim` once it has sent some collectives' bytes (training, not starting: on a
// loaded machine a fixed pause could end before the rendezvous), and returns
// the launcher's wait status and the seconds from the kill to the launcher's exit. `yaml` must be a
// name no other test uses: the ranks are found by it.
struct KillResult {
  int status = 0;
  double took_s = 0;
  std::string err;
};
static KillResult spawn_and_kill(const std::string& dir, const std::string& yaml, const std::string& policy,
                                 int victim, int timeout_s) {
  pid_t launcher = fork();
  REQUIRE_MESSAGE(launcher >= 0, "cannot fork: " << std::strerror(errno));
  if (launcher == 0) {
    std::string command = "cd '" + dir + "' && exec '" + std::string(std::getenv("LOCOSIM_BIN")) +
                          "/locosim-real' " + yaml + " -p " + policy + " --spawn 4 --timeout " +
                          std::to_string(timeout_s) + " >out.txt 2>err.txt";
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  const pid_t pid = find_rank(yaml, victim);
  if (pid < 0) kill(launcher, SIGTERM);
  REQUIRE(pid > 0);
  kill_once_training(pid);
  const auto killed_at = std::chrono::steady_clock::now();
  KillResult r;
  waitpid(launcher, &r.status, 0);
  r.took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  r.err = read_file(dir + "/err.txt");
  return r;
}

// The last step of each worker in metrics.csv (time_s,worker,step,...).
// metrics.csv's (worker, step) of each row, in file order.
static std::vector<std::pair<int, int64_t>> worker_steps(const std::string& metrics_csv) {
  std::vector<std::pair<int, int64_t>> rows;
  std::istringstream in(metrics_csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string time, worker, step;
    std::getline(fields, time, ',');
    std::getline(fields, worker, ',');
    std::getline(fields, step, ',');
    rows.emplace_back(std::stoi(worker), std::stoll(step));
  }
  return rows;
}

static std::map<int, int64_t> last_steps(const std::string& metrics_csv) {
  std::map<int, int64_t> last;
  for (const auto& [worker, step] : worker_steps(metrics_csv)) last[worker] = std::max(last[worker], step);
  return last;
}

TEST_CASE("real: a killed rank leaves the others to re-form the group and finish") {
  const std::string dir = scratch_dir("kill");
  write_corpus(dir + "/corpus.txt", 20000);
  // Rank 1 is killed some collectives and half a second in (a tenth of the run or so here, under a
  // third on a machine four times as fast): the others go on for most of the run. The steps after the
  // kill are most of this test's time.
  const int steps = 240;
  write_file(dir + "/kill-one.yaml", four_ranks_yaml(steps));
  // A collective every step, and one every H steps (fedavg's is DiLoCo's: the same transport path).
  for (const std::string policy : {"ddp", "diloco"}) {
    CAPTURE(policy);
    KillResult r = spawn_and_kill(dir, "kill-one.yaml", policy, 1, 30);
    CAPTURE(r.err);
    CHECK(WIFEXITED(r.status));
    CHECK(WEXITSTATUS(r.status) == 0);
    CHECK(r.err.find("rank 1 was killed by signal 9; the others went on without it") != std::string::npos);
    const std::string run = dir + "/runs-real/small/" + policy;
    REQUIRE(fs::exists(run + "/metrics.csv"));
    const auto last = last_steps(read_file(run + "/metrics.csv"));
    CHECK(last.count(1));
    if (last.count(1)) CHECK(last.at(1) < steps);  // its rows stop where it died
    for (int rank : {0, 2, 3}) {
      CAPTURE(rank);
      CHECK(last.count(rank));
      if (last.count(rank)) CHECK(last.at(rank) == steps);
    }
    CHECK(read_file(run + "/events.csv").find("\n1,away,") != std::string::npos);
    const RunSummary summary = read_summary_json(run + "/summary.json");
    CHECK(summary.workers_lost == 1);
    CHECK(std::isfinite(summary.final_eval_loss));
    CHECK(summary.useful_tokens > 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("real: a killed rank 0 (the store's host) makes the others exit non-zero, naming it, within the timeout") {
  const std::string dir = scratch_dir("kill0");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/kill-zero.yaml", four_ranks_yaml(100000));
  const int timeout_s = 30;
  KillResult r = spawn_and_kill(dir, "kill-zero.yaml", "ddp", 0, timeout_s);
  CAPTURE(r.err);
  CHECK(WIFEXITED(r.status));
  CHECK(WEXITSTATUS(r.status) == 1);
  CHECK(r.err.find("rank 0 was killed by signal 9\n") != std::string::npos);
  CHECK(r.err.find("lost rank 0") != std::string::npos);
  CHECK(r.took_s < timeout_s + 5);
  CHECK_FALSE(fs::exists(dir + "/runs-real/small/ddp"));
  fs::remove_all(dir);
}

// The NUL-separated strings of /proc/<pid>/<what> (cmdline, environ).
static std::vector<std::string> proc_strings(pid_t pid, const std::string& what) {
  const std::string text = read_file("/proc/" + std::to_string(pid) + "/" + what);
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\0', at);
    out.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

// The final eval loss of `worker` (its last row with an eval_loss) in metrics.csv.
static double final_eval_loss(const std::string& metrics_csv, int worker) {
  std::istringstream in(metrics_csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  {
    std::istringstream h(line);
    for (std::string c; std::getline(h, c, ',');) header.push_back(c);
  }
  const size_t eval = std::find(header.begin(), header.end(), "eval_loss") - header.begin();
  double loss = NAN;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::istringstream f(line);
    for (std::string c; std::getline(f, c, ',');) fields.push_back(c);
    if (fields.size() > eval && std::stoi(fields[1]) == worker && !fields[eval].empty()) loss = std::stod(fields[eval]);
  }
  return loss;
}

TEST_CASE("real: a killed rank that is restarted rejoins the group") {
  const std::string dir = scratch_dir("rejoin");
  write_corpus(dir + "/corpus.txt", 20000);
  // Rank 1 is killed some collectives in (see above); the others wait for it a sixth of --timeout (5 s,
  // when a restart here is back in 2 to 4 s) before going on without it, then have most of the run left
  // for a slower restart to come back in.
  const int steps = 400;
  std::string yaml = four_ranks_yaml(steps);
  yaml = replaced(yaml, "{name: diloco, inner_steps: 4", "{name: diloco, inner_steps: 2");
  write_file(dir + "/rejoin.yaml", yaml);
  pid_t launcher = fork();
  REQUIRE(launcher >= 0);
  if (launcher == 0) {
    std::string command = "cd '" + dir + "' && exec '" + std::string(std::getenv("LOCOSIM_BIN")) +
                          "/locosim-real' rejoin.yaml -p diloco --spawn 4 --timeout 30 >out.txt 2>err.txt";
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  const pid_t pid = find_rank("rejoin.yaml", 1);
  if (pid < 0) kill(launcher, SIGTERM);
  REQUIRE(pid > 0);
  // Rank 1 as the launcher started it: its arguments and environment, for the restart.
  std::vector<std::string> argv = proc_strings(pid, "cmdline"), envp = proc_strings(pid, "environ");
  REQUIRE(!argv.empty());
  argv[0] = std::string(std::getenv("LOCOSIM_BIN")) + "/locosim-real";
  kill_once_training(pid);
  pid_t again = fork();
  REQUIRE(again >= 0);
  if (again == 0) {
    if (chdir(dir.c_str()) != 0) std::_Exit(127);
    if (!freopen("rejoin-err.txt", "w", stderr) || !freopen("rejoin-out.txt", "w", stdout)) std::_Exit(127);
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(s.data());
    for (auto& s : envp) e.push_back(s.data());
    a.push_back(nullptr);
    e.push_back(nullptr);
    execve(a[0], a.data(), e.data());
    std::_Exit(127);
  }
  int status = 0, again_status = 0;
  waitpid(launcher, &status, 0);
  waitpid(again, &again_status, 0);
  const std::string err = read_file(dir + "/err.txt"), again_err = read_file(dir + "/rejoin-err.txt");
  CAPTURE(err);
  CAPTURE(again_err);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(WIFEXITED(again_status));
  CHECK(WEXITSTATUS(again_status) == 0);
  const std::string run = dir + "/runs-real/small/diloco";
  REQUIRE(fs::exists(run + "/metrics.csv"));
  const std::string metrics = read_file(run + "/metrics.csv");
  // Rank 1's steps: its first life's from 1, then from where it went back in to the last.
  std::vector<int64_t> steps_1;
  for (const auto& [worker, step] : worker_steps(metrics)) {
    if (worker == 1) steps_1.push_back(step);
  }
  std::sort(steps_1.begin(), steps_1.end());
  REQUIRE(!steps_1.empty());
  CHECK(steps_1.front() == 1);
  CHECK(steps_1.back() == steps);
  size_t gaps = 0;
  for (size_t i = 1; i < steps_1.size(); ++i) gaps += steps_1[i] > steps_1[i - 1] + 1;
  CHECK(gaps == 1);  // the steps it was away for
  for (int rank : {0, 2, 3}) CHECK(last_steps(metrics).at(rank) == steps);
  const std::string events = read_file(run + "/events.csv");
  CHECK(events.find("\n1,away,") != std::string::npos);
  size_t join = events.find("\n1,join,");
  REQUIRE(join != std::string::npos);
  {
    std::istringstream f(events.substr(join + 1, events.find('\n', join + 1) - join - 1));
    std::vector<std::string> fields;
    for (std::string c; std::getline(f, c, ',');) fields.push_back(c);
    const std::string header = events.substr(0, events.find('\n'));
    std::vector<std::string> names;
    std::istringstream h(header);
    for (std::string c; std::getline(h, c, ',');) names.push_back(c);
    const size_t bytes = std::find(names.begin(), names.end(), "bytes") - names.begin();
    REQUIRE(bytes < fields.size());
    // What the joiner downloaded weighs what a join weighs in the simulator (the group's state, by
    // its tensors' shapes): a world in which the same host leaves for 3 s and comes back.
    std::string world = replaced(yaml, "steps: " + std::to_string(steps), "steps: 40");
    world = replaced(world, "policies:", "world:\n  failure_timeout: 10 s\n  events:\n"
                                         "    - {host: slow, at: 3 s, until: 6 s, state: off}\npolicies:");
    write_file(dir + "/world.yaml", world);
    REQUIRE(run_locosim("run world.yaml -p diloco -o sim", dir).exit_code == 0);
    const std::vector<testing::EventRow> simulated = event_rows(read_file(dir + "/sim/small/diloco/events.csv"));
    const auto join_row = std::find_if(simulated.begin(), simulated.end(),
                                       [](const testing::EventRow& e) { return e.kind == "join"; });
    REQUIRE(join_row != simulated.end());
    CHECK(join_row->bytes > 0);
    CHECK(std::stod(fields[bytes]) == join_row->bytes);
  }
  const RunSummary summary = read_summary_json(run + "/summary.json");
  CHECK(summary.workers_lost == 1);
  CHECK(summary.workers_joined == 1);
  CHECK(final_eval_loss(metrics, 1) == final_eval_loss(metrics, 0));
  fs::remove_all(dir);
}
