// What the CLIs never do, whatever the input or the interruption: remove or replace what locosim did
// not create, report a run that did not finish as a result, keep a file whose write failed, or leave
// a process or a temporary folder behind. Each case reproduces a defect that once happened.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

// A scratch folder with corpus.txt and s.yaml (the small scenario, edited by `edit`).
std::string setup(const std::string& name, const std::string& yaml = small_scenario_yaml()) {
  const std::string dir = scratch_dir(name);
  write_corpus(dir + "/corpus.txt", 60000);
  write_file(dir + "/s.yaml", yaml);
  return dir;
}

// Hidden temporary folders (".<name>.tmp.<pid>.<n>") anywhere under `dir`.
int temporaries_under(const std::string& dir) {
  int n = 0;
  if (!fs::exists(dir)) return 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    n += e.is_directory() && e.path().filename().string().find(".tmp.") != std::string::npos;
  }
  return n;
}

// Starts `$LOCOSIM_BIN/<program> <args>` in `cwd` without waiting; its output goes to cwd/.log.
pid_t start(const std::string& program, const std::string& args, const std::string& cwd) {
  const std::string command = "cd '" + cwd + "' && exec '" + std::string(std::getenv("LOCOSIM_BIN")) + "/" + program +
                              "' " + args + " >.log 2>&1 </dev/null";
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  return pid;
}

// Waits up to `limit` for `pid` to exit; its exit code, 128 + signal if killed, or -1 on time-out.
int wait_for(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

// The children of `pid` (from /proc), e.g. the policy processes of `locosim run`.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == pid) out.push_back(std::stoi(name));
  }
  return out;
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] != 'Z';
}

// Polls until `ready` holds (at most `limit`).
template <class F>
bool eventually(F ready, std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

TEST_CASE("safety: labels and names that would leave the output folder are refused, and nothing is removed") {
  const std::string dir = setup("safety-labels");
  write_file(dir + "/runs/earlier/ddp/keep.txt", "an earlier run\n");
  write_file(dir + "/elsewhere/keep.txt", "not locosim's\n");
  const std::string good = small_scenario_yaml();
  const std::vector<std::string> bad = {
      replaced(good, "  - ddp\n", "  - {name: ddp, label: '..'}\n"),
      replaced(good, "  - ddp\n", "  - {name: ddp, label: ''}\n"),
      replaced(good, "  - ddp\n", "  - {name: ddp, label: '" + dir + "/elsewhere'}\n"),
      replaced(good, "name: small", "name: '..'"),
  };
  for (const std::string& yaml : bad) {
    CAPTURE(yaml.substr(0, 400));
    write_file(dir + "/s.yaml", yaml);
    for (const std::string program : {"locosim", "locosim-real"}) {
      CliResult r = run_locosim(program == "locosim" ? "run s.yaml" : "s.yaml --policy ddp --spawn 2", dir, program);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("error: ") != std::string::npos);
    }
    CHECK(fs::exists(dir + "/runs/earlier/ddp/keep.txt"));
    CHECK(fs::exists(dir + "/elsewhere/keep.txt"));
    CHECK_FALSE(fs::exists(dir + "/runs/small"));
    CHECK_FALSE(fs::exists(dir + "/runs-real"));
  }
}

TEST_CASE("safety: a run never replaces a folder locosim did not write") {
  const std::string dir = setup("safety-foreign");
  write_file(dir + "/runs/small/ddp/notes.txt", "mine\n");
  CliResult r = run_locosim("run s.yaml", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("runs/small exists and was not written by locosim") != std::string::npos);
  CHECK(read_file(dir + "/runs/small/ddp/notes.txt") == "mine\n");

  // Its own folders it replaces: a second run of the same scenario succeeds.
  fs::remove_all(dir + "/runs");
  REQUIRE(run_locosim("run s.yaml -p ddp", dir).exit_code == 0);
  CHECK(fs::exists(dir + "/runs/small/.locosim"));
  CHECK(fs::exists(dir + "/runs/small/ddp/.locosim"));
  CHECK(run_locosim("run s.yaml -p ddp", dir).exit_code == 0);

  // ... but not a folder someone put where a policy's folder goes.
  write_file(dir + "/runs/small/diloco/notes.txt", "mine\n");
  r = run_locosim("run s.yaml", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("runs/small/diloco exists and was not written by locosim") != std::string::npos);
  CHECK(read_file(dir + "/runs/small/diloco/notes.txt") == "mine\n");
  r = run_locosim("s.yaml --policy diloco --spawn 2", dir, "locosim-real");
  CHECK(r.exit_code == 0);  // runs-real/ is another folder
}

TEST_CASE("safety: a write that fails (file-size limit, as a full disk) fails the run and keeps nothing") {
  const std::string dir = setup("safety-full");
  // 16 KiB is less than links.csv and trace.json need. With SIGXFSZ ignored, write(2) fails with EFBIG;
  // with its default action the process is killed: both must end the same way.
  for (const std::string trap : {"trap '' XFSZ; ", ""}) {
    CAPTURE(trap);
    const std::string command = "cd '" + dir + "' && " + trap + "ulimit -f 16 && '" + std::getenv("LOCOSIM_BIN") +
                                "/locosim' run s.yaml -o out >.out 2>.err </dev/null";
    const int status = std::system(("bash -c \"" + command + "\"").c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
    const std::string err = read_file(dir + "/.err");
    CHECK(err.find("policies failed") != std::string::npos);
    // Not "killed by signal 25": locosim ignores SIGXFSZ itself, and the file is named.
    CHECK(err.find("cannot be written: File too large") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/out/small/ddp"));
    CHECK_FALSE(fs::exists(dir + "/out/small/diloco"));
    CHECK_FALSE(fs::exists(dir + "/out/small/summary.csv"));
    CHECK(temporaries_under(dir + "/out") == 0);
  }
}

TEST_CASE("safety: with no room for one byte (ulimit -f 0) the run fails naming the file, exit 1, and leaves nothing") {
  // Regression: SIGXFSZ killed the parent without a word (exit 153), leaving a 0-byte marker.
  const std::string dir = setup("safety-no-room");
  // Its messages go through a pipe to a process without the limit, else they could not be written either.
  const std::string command = "set -o pipefail; cd '" + dir + "' && (ulimit -f 0 && exec '" + std::getenv("LOCOSIM_BIN") +
                              "/locosim' run s.yaml -o out </dev/null 2>&1) | cat >.err";
  const int status = std::system(("bash -c \"" + command + "\"").c_str());
  REQUIRE(WIFEXITED(status));
  const std::string err = read_file(dir + "/.err");
  CAPTURE(err);
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(err.find("out/small/.locosim: cannot be written: File too large") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out"));

  // merge's summary.csv goes through a temporary file: not kept when its write fails (regression:
  // 0-byte .summary.csv.<pid>.tmp files were left).
  REQUIRE(run_locosim("run s.yaml -p ddp -o out", dir).exit_code == 0);
  const std::string merge = "set -o pipefail; cd '" + dir + "' && (ulimit -f 0 && exec '" + std::getenv("LOCOSIM_BIN") +
                            "/locosim' merge s.yaml -o out </dev/null 2>&1) | cat >.err";
  const int merged = std::system(("bash -c \"" + merge + "\"").c_str());
  REQUIRE(WIFEXITED(merged));
  CHECK(WEXITSTATUS(merged) == 1);
  CHECK(read_file(dir + "/.err").find("summary.csv.") != std::string::npos);
  CHECK(read_file(dir + "/.err").find("cannot be written: File too large") != std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir + "/out/small")) {
    CHECK_MESSAGE(entry.path().filename().string().find(".tmp") == std::string::npos, entry.path());
  }
}

TEST_CASE("safety: a sweep stopped early leaves no folder for the points it did not reach") {
  // Regression: a 10 000-point sweep killed after 36 points left 9 964 empty point folders.
  std::string yaml = replaced(small_scenario_yaml(), "steps: 12", "steps: 20000");
  yaml += "sweep:\n  seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
  const std::string dir = setup("safety-sweep-stop", yaml);
  pid_t pid = start("locosim", "run s.yaml -p ddp -j 1", dir);
  REQUIRE(eventually([&] { return temporaries_under(dir + "/runs") == 1; }));
  kill(pid, SIGINT);
  CHECK(wait_for(pid, std::chrono::seconds(20)) == 130);
  CHECK(temporaries_under(dir + "/runs") == 0);
  CHECK_FALSE(fs::exists(dir + "/runs/small"));  // no point ran to its end: nothing of the scenario stays
}

TEST_CASE("safety: SIGINT stops the children and removes their folders, and a killed run leaves nothing after the next") {
  const std::string dir = setup("safety-interrupt", replaced(small_scenario_yaml(), "steps: 12", "steps: 100000"));
  pid_t pid = start("locosim", "run s.yaml -j 2", dir);
  std::vector<pid_t> children;
  REQUIRE(eventually([&] { return temporaries_under(dir + "/runs") == 2 && (children = children_of(pid)).size() == 2; }));
  kill(pid, SIGINT);
  CHECK(wait_for(pid, std::chrono::seconds(20)) == 130);
  for (pid_t child : children) CHECK_FALSE(alive(child));
  CHECK(temporaries_under(dir + "/runs") == 0);
  CHECK_FALSE(fs::exists(dir + "/runs/small/ddp"));
  CHECK(read_file(dir + "/.log").find("interrupted by signal 2") != std::string::npos);

  // SIGKILL cannot be caught: the children stop with it (they get SIGTERM when their parent dies),
  // and the next run removes the temporary folders they left.
  pid = start("locosim", "run s.yaml -j 2", dir);
  std::vector<pid_t> orphans;
  REQUIRE(eventually([&] { return temporaries_under(dir + "/runs") == 2 && (orphans = children_of(pid)).size() == 2; }));
  kill(pid, SIGKILL);
  CHECK(wait_for(pid, std::chrono::seconds(10)) == 128 + SIGKILL);
  CHECK(eventually([&] {
    for (pid_t child : orphans) if (alive(child)) return false;
    return true;
  }, std::chrono::seconds(20)));
  CHECK(temporaries_under(dir + "/runs") == 2);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  REQUIRE(run_locosim("run s.yaml -p ddp", dir).exit_code == 0);
  CHECK(temporaries_under(dir + "/runs") == 0);
}

TEST_CASE("safety: SIGINT to the locosim-real launcher stops its ranks") {
  const std::string dir = setup("safety-real-interrupt", replaced(small_scenario_yaml(), "steps: 12", "steps: 100000"));
  pid_t pid = start("locosim-real", "s.yaml --policy diloco --spawn 2", dir);
  std::vector<pid_t> ranks;
  REQUIRE(eventually([&] { return (ranks = children_of(pid)).size() == 2; }));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the ranks are training
  kill(pid, SIGINT);
  CHECK(wait_for(pid, std::chrono::seconds(20)) == 130);
  for (pid_t rank : ranks) CHECK_FALSE(alive(rank));
  CHECK(temporaries_under(dir + "/runs-real") == 0);
}

TEST_CASE("safety: a run that cannot fit the machine is refused up front, naming the figures") {
  std::string yaml = replaced(small_scenario_yaml(), "  hosts:\n", "  hosts:\n    - {name: many, accelerator: gpu, count: 1000, "
                              "uplink: {bandwidth: 50 Mbps, latency: 10 ms}, downlink: {bandwidth: 500 Mbps, latency: 10 ms}}\n");
  yaml = replaced(yaml, "steps: 12", "steps: 40");
  const std::string dir = setup("safety-estimate", yaml);
  CliResult r = run_locosim("run s.yaml", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("error: this run needs about ") != std::string::npos);
  CHECK(r.err.find("GB of memory available") != std::string::npos);
  CHECK(r.err.find("--force") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/runs"));
}
