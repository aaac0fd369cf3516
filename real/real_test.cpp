// The real backend against the simulator: same losses and final parameters for every policy,
// the same run-folder format, and a clear failure when a rank dies.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "algorithms/policies.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

// Settings that make each policy communicate within the test's 12 steps. A policy added to the
// catalogue without an entry here fails the parity test until it gets one.
const std::map<std::string, std::string> kParitySettings = {
    {"ddp", "{name: ddp, wire: fp16}"},
    {"diloco", "{name: diloco, inner_steps: 4, wire: fp16}"},
    {"fedavg", "{name: fedavg, inner_steps: 4}"},
    {"co2", "{name: co2, inner_steps: 3}"},
    {"streaming_diloco", "{name: streaming_diloco, inner_steps: 4, fragments: 2, sync_delay: 1}"},
    {"demo", "{name: demo, lr: 1.0e-3, topk: 8, chunk: 16}"},
};

std::string parity_scenario() {
  std::string yaml = small_scenario_yaml();
  yaml = yaml.substr(0, yaml.find("policies:"));
  yaml += "policies:\n";
  for (const auto& name : policy_names()) {
    auto it = kParitySettings.find(name);
    if (it != kParitySettings.end()) yaml += "  - " + it->second + "\n";
  }
  return yaml;
}

std::string column_header(const std::string& path) {
  std::string text = read_file(path);
  return text.substr(0, text.find('\n'));
}

// Drops the time_s column: wall-clock on the real backend, simulated in the simulator.
std::string without_times(const std::string& metrics_csv) {
  std::string out, line;
  std::istringstream in(metrics_csv);
  while (std::getline(in, line)) out += line.substr(line.find(',') + 1) + "\n";
  return out;
}

}  // namespace

TEST_CASE("real: every policy gives the simulator's losses and final parameters with 2 ranks on CPU") {
  for (const auto& name : policy_names()) {
    CAPTURE(name);
    CHECK_MESSAGE(kParitySettings.count(name), "add parity settings for policy " << name);
  }
  const std::string dir = scratch_dir("parity");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", parity_scenario());
  REQUIRE(run_locosim("run s.yaml -o sim", dir).exit_code == 0);
  for (const auto& [name, settings] : kParitySettings) {
    CAPTURE(name);
    CliResult r = run_locosim("s.yaml --policy " + name + " --spawn 2 -o real --timeout 30", dir, "locosim-real");
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string sim = dir + "/sim/small/" + name, real = dir + "/real/small/" + name;
    // Identical in fp32: the real backend reduces in rank order exactly as the simulator does.
    CHECK(without_times(read_file(real + "/metrics.csv")) == without_times(read_file(sim + "/metrics.csv")));
    std::string print = read_file(sim + "/summary.json");
    print = print.substr(print.find("params_fingerprint"), 40);
    CHECK(read_file(real + "/summary.json").find(print) != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("real: the launcher's run folder has the simulator's files and columns") {
  const std::string dir = scratch_dir("format");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  REQUIRE(run_locosim("run s.yaml -o sim -p ddp", dir).exit_code == 0);
  REQUIRE(run_locosim("s.yaml -p ddp --spawn 2 -o real", dir, "locosim-real").exit_code == 0);
  std::vector<std::string> sim_files, real_files;
  for (const auto& e : fs::directory_iterator(dir + "/sim/small/ddp")) sim_files.push_back(e.path().filename());
  for (const auto& e : fs::directory_iterator(dir + "/real/small/ddp")) real_files.push_back(e.path().filename());
  std::sort(sim_files.begin(), sim_files.end());
  std::sort(real_files.begin(), real_files.end());
  CHECK(sim_files == real_files);
  for (const char* csv : {"metrics.csv", "events.csv"}) {
    CHECK(column_header(dir + "/sim/small/ddp/" + csv) == column_header(dir + "/real/small/ddp/" + csv));
  }
  fs::remove_all(dir);
}

// CPU time (user + system) the process has used so far, from /proc/<pid>/stat.
static double cpu_seconds(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state; 14 and 15 are utime and stime
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

TEST_CASE("real: a killed rank makes the others exit non-zero, naming it, within the timeout") {
  const std::string dir = scratch_dir("kill");
  write_corpus(dir + "/corpus.txt", 20000);
  std::string yaml = small_scenario_yaml();
  yaml.replace(yaml.find("steps: 12"), 9, "steps: 100000");
  write_file(dir + "/long.yaml", yaml);
  const int timeout_s = 10;
  pid_t launcher = fork();
  if (launcher == 0) {
    std::string command = "cd '" + dir + "' && exec '" + std::string(std::getenv("LOCOSIM_BIN")) +
                          "/locosim-real' long.yaml -p ddp --spawn 2 --timeout " + std::to_string(timeout_s) +
                          " >out.txt 2>err.txt";
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  // Find rank 1 (a process running long.yaml with RANK=1), let it train a little, kill it.
  pid_t rank1 = -1;
  for (int i = 0; i < 200 && rank1 < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& p : fs::directory_iterator("/proc")) {
      std::string cmdline = read_file(p.path().string() + "/cmdline");
      std::string env = read_file(p.path().string() + "/environ");
      if (cmdline.find("long.yaml") != std::string::npos && env.find(std::string("RANK=1\0", 7)) != std::string::npos &&
          env.find("LOCAL_RANK=1") != std::string::npos) {
        rank1 = std::stoi(p.path().filename().string());
      }
    }
  }
  REQUIRE(rank1 > 0);
  // Kill it while it trains, not while it starts: wait until it has used 2 s of CPU (a rank waiting
  // in the rendezvous sleeps; on a loaded machine a fixed pause could end before the rendezvous).
  for (int i = 0; i < 600 && cpu_seconds(rank1) < 2.0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(rank1, SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  int status = 0;
  waitpid(launcher, &status, 0);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  std::string err = read_file(dir + "/err.txt");
  CAPTURE(err);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(err.find("rank 1 was killed by signal 9") != std::string::npos);
  CHECK(err.find("rank 0: step ") != std::string::npos);
  CHECK(err.find("lost rank 1") != std::string::npos);
  CHECK(took_s < timeout_s + 5);
  CHECK_FALSE(fs::exists(dir + "/runs-real/small/ddp"));
  fs::remove_all(dir);
}
