// Run folders: locosim never removes or replaces what it did not create (regressions: a label of
// ".." emptied the output folder; an absolute label removed a folder elsewhere; killed runs left
// hidden temporary folders forever).
#include "report/run_folder.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tests/doctest_torch.hpp"

namespace fs = std::filesystem;
using namespace locosim;

namespace {

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("locosim-rf-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void touch(const fs::path& p) { std::ofstream(p) << "mine\n"; }

// Runs `body` in a child process, which then exits; returns the child's pid (the parent waits for it).
template <class Body>
pid_t in_child(Body body) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    body();
    std::_Exit(0);
  }
  return pid;
}

int count_temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().find(".tmp.") != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("run folder: child_path takes one plain name, nothing that leaves the folder") {
  const fs::path root = "/tmp/out";
  CHECK(child_path(root, "ddp") == fs::path("/tmp/out/ddp"));
  CHECK(child_path(root, "diloco-h50.v2") == fs::path("/tmp/out/diloco-h50.v2"));
  for (const char* bad : {"", ".", "..", "/etc", "a/b", "../x"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(child_path(root, bad), std::invalid_argument);
  }
}

TEST_CASE("run folder: a folder locosim did not write is never claimed or replaced") {
  const fs::path root = fresh("claim");
  const fs::path users = root / "users";
  fs::create_directories(users);
  touch(users / "thesis.tex");
  CHECK_THROWS_WITH_AS(claim_folder(users), doctest::Contains("was not written by locosim"), std::invalid_argument);
  CHECK_THROWS_AS(check_replaceable(users), std::invalid_argument);
  CHECK(fs::exists(users / "thesis.tex"));
  CHECK_FALSE(fs::exists(users / kRunMarker));

  claim_folder(root / "fresh");  // absent: created and marked
  CHECK(is_locosim_folder(root / "fresh"));
  fs::create_directories(root / "empty");
  claim_folder(root / "empty");  // empty: marked
  CHECK(is_locosim_folder(root / "empty"));
  fs::remove_all(root);
}

TEST_CASE("run folder: processes that claim one new folder at once all succeed, as a job array's shards do") {
  // A folder goes from absent to empty to marked to filled; another process's check must accept each
  // state, whichever it sees at each of its steps (a regression: one shard of a SLURM array saw the
  // folder unmarked, then not empty, and refused it). Three processes claim each of many new folders,
  // starting each one together (a barrier in shared memory).
  constexpr int kProcesses = 3, kRounds = 1000;
  const fs::path root = fresh("race");
  const auto point = [&root](int round) { return root / ("point-" + std::to_string(round)); };
  struct Shared {
    std::atomic<int> arrived{0};
    std::atomic<int> refused{0};
  };
  void* memory = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(memory != MAP_FAILED);
  auto* shared = new (memory) Shared;
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      for (int round = 0; round < kRounds; ++round) {
        shared->arrived.fetch_add(1);
        while (shared->arrived.load() < kProcesses * (round + 1)) sched_yield();
        try {
          claim_folder(point(round));
        } catch (...) {
          shared->refused.fetch_add(1);
        }
      }
      std::_Exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  CHECK_MESSAGE(shared->refused.load() == 0, shared->refused.load(), " claims refused");
  int marked = 0;
  for (int round = 0; round < kRounds; ++round) marked += is_locosim_folder(point(round));
  CHECK(marked == kRounds);
  ::munmap(memory, sizeof(Shared));
  fs::remove_all(root);
}

TEST_CASE("run folder: a staged folder appears only on commit, and replaces only a locosim folder") {
  const fs::path root = fresh("stage");
  claim_folder(root);
  {
    StagedFolder staged(root / "ddp");
    touch(staged.path() / "metrics.csv");
    CHECK_FALSE(fs::exists(root / "ddp"));
    staged.commit();
  }
  CHECK(fs::exists(root / "ddp" / "metrics.csv"));
  CHECK(is_locosim_folder(root / "ddp"));
  CHECK(count_temporaries(root) == 0);

  {  // the next run of the same policy replaces it
    StagedFolder staged(root / "ddp");
    touch(staged.path() / "events.csv");
    staged.commit();
  }
  CHECK(fs::exists(root / "ddp" / "events.csv"));
  CHECK_FALSE(fs::exists(root / "ddp" / "metrics.csv"));

  {  // dropped without commit: nothing changes, nothing is left
    StagedFolder staged(root / "ddp");
    touch(staged.path() / "half.csv");
  }
  CHECK(fs::exists(root / "ddp" / "events.csv"));
  CHECK(count_temporaries(root) == 0);

  // Someone else's folder where the run would go: commit refuses and keeps it.
  fs::create_directories(root / "diloco");
  touch(root / "diloco" / "notes.txt");
  StagedFolder staged(root / "diloco");
  CHECK_THROWS_AS(staged.commit(), std::runtime_error);
  CHECK(fs::exists(root / "diloco" / "notes.txt"));
  fs::remove_all(root);
}

TEST_CASE("run folder: temporaries of dead processes are removed, live ones and foreign ones kept") {
  const fs::path root = fresh("stale");
  claim_folder(root);
  // A process that stages a folder and dies without cleaning up (as under SIGKILL).
  const pid_t pid = in_child([&] {
    auto* leaked = new StagedFolder(root / "ddp");
    (void)leaked;
  });
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(count_temporaries(root) == 1);

  StagedFolder live(root / "diloco");            // this process's own: locked, kept
  fs::create_directories(root / ".notes.tmp.1");  // looks temporary but has no marker: not ours, kept
  CHECK(remove_stale_temporaries(root) == 1);
  CHECK(fs::exists(live.path()));
  CHECK(fs::exists(root / ".notes.tmp.1"));
  CHECK(count_temporaries(root) == 2);
  fs::remove_all(root);
}

TEST_CASE("run folder: a temporary whose writer died before its marker was in place is removed") {
  const fs::path root = fresh("unplaced");
  claim_folder(root);
  const pid_t gone = in_child([] {});  // a process that has ended, and whose id is free
  int status = 0;
  waitpid(gone, &status, 0);
  const fs::path dead = root / (".ddp.tmp." + std::to_string(gone) + ".0");
  const fs::path live = root / (".diloco.tmp." + std::to_string(::getpid()) + ".0");
  const fs::path other = root / (".notes.tmp." + std::to_string(gone) + ".0");
  for (const fs::path& dir : {dead, live, other}) fs::create_directories(dir);
  touch(dead / ".locosim.new");  // the marker being written when its writer died
  touch(live / ".locosim.new");  // a live writer's, about to be put in place
  touch(other / "notes.txt");    // someone else's
  CHECK(remove_stale_temporaries(root) == 1);
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
  fs::remove_all(root);
}

TEST_CASE("run folder: another process clearing stale temporaries never takes a folder being staged") {
  // Two runs of a sweep point (SLURM array tasks) start together in the same folder: one clears stale
  // temporaries while the other stages its own. A marker that shows before it is locked looked stale
  // to the first, which locked it, so the second failed ("cannot lock its marker") or lost its folder.
  const fs::path root = fresh("clearing");
  claim_folder(root);
  const pid_t cleaner = in_child([&] {  // clears the folder again and again for two seconds
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < end) remove_stale_temporaries(root);
  });
  int staged = 0, failed = 0, lost = 0;
  for (int status = 0; waitpid(cleaner, &status, WNOHANG) == 0; ++staged) {
    try {
      StagedFolder folder(root / "diloco");
      lost += !fs::exists(folder.path() / kRunMarker);
    } catch (const std::exception&) {
      ++failed;
    }
  }
  INFO(staged << " folders staged while the other process cleared");
  CHECK(staged > 100);
  CHECK(failed == 0);
  CHECK(lost == 0);
  fs::remove_all(root);
}

TEST_CASE("run folder: a child's lock keeps its folder alive after the parent is gone") {
  const fs::path root = fresh("inherit");
  claim_folder(root);
  int ready[2], release[2];
  REQUIRE(pipe(ready) == 0);
  REQUIRE(pipe(release) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // stages, forks a grandchild that keeps running, and dies
    auto* leaked = new StagedFolder(root / "ddp");
    (void)leaked;
    if (fork() == 0) {
      close(release[1]);  // so that the test closing its end is an end of file here
      char c;
      if (write(ready[1], "x", 1) != 1) std::_Exit(1);
      pollfd wait_for_release{release[0], POLLIN, 0};
      poll(&wait_for_release, 1, 30000);  // until the test lets it go (never longer than 30 s)
      std::_Exit(0);
    }
    std::_Exit(0);
  }
  close(release[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  char c;
  REQUIRE(read(ready[0], &c, 1) == 1);
  CHECK(remove_stale_temporaries(root) == 0);  // the grandchild still writes into it
  close(release[1]);                            // the grandchild exits
  for (int i = 0; i < 100 && remove_stale_temporaries(root) == 0; ++i) usleep(20000);
  CHECK(count_temporaries(root) == 0);
  fs::remove_all(root);
}
