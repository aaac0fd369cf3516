// metrics.csv and events.csv come out in one total order whatever order the rows were recorded in:
// (worker, step) and (worker, start, end, kind, peer, bytes), as one sort of all the rows gives.
#include "report/recorder_csv.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/doctest_torch.hpp"

using namespace locosim;

namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("recorder csv: rows recorded in any order are written by worker, then in time order") {
  std::mt19937 rng(7);
  Recorder recorder;
  std::vector<EventRow> events;
  std::vector<MetricRow> metrics;
  // Workers 0..9 and the relay (10), times that tie within and across workers, shuffled.
  for (int worker = 0; worker <= 10; ++worker) {
    for (int i = 0; i < 300; ++i) {
      const double start = static_cast<double>(rng() % 40) * 0.25;
      const auto kind = static_cast<EventKind>(rng() % 4);
      events.push_back({worker, kind, start, start + static_cast<double>(rng() % 3), static_cast<double>(rng() % 5),
                        static_cast<int>(rng() % 3) - 1});
      if (worker < 10) metrics.push_back({static_cast<double>(i), worker, i + 1, 64 * (i + 1), 1.0 / (i + 1)});
    }
  }
  std::shuffle(events.begin(), events.end(), rng);
  std::shuffle(metrics.begin(), metrics.end(), rng);
  for (const EventRow& e : events) recorder.event(e);
  for (const MetricRow& m : metrics) recorder.metric(m);

  const auto dir = std::filesystem::temp_directory_path() / ("locosim-recorder-csv-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_events_csv(recorder, (dir / "events.csv").string());
  write_metrics_csv(recorder, (dir / "metrics.csv").string());

  std::stable_sort(events.begin(), events.end(), [](const EventRow& a, const EventRow& b) {
    return std::tie(a.worker, a.start_s, a.end_s, a.kind, a.peer, a.bytes) <
           std::tie(b.worker, b.start_s, b.end_s, b.kind, b.peer, b.bytes);
  });
  const std::vector<std::string> event_lines = lines_of((dir / "events.csv").string());
  REQUIRE(event_lines.size() == events.size() + 1);
  for (size_t i = 0; i < events.size(); ++i) {
    const EventRow& e = events[i];
    std::ostringstream expected;
    expected << e.worker << ',' << event_kind_name(e.kind) << ',' << e.start_s << ',' << e.end_s << ',' << e.bytes << ',';
    if (e.peer >= 0) expected << e.peer;
    CHECK(event_lines[i + 1] == expected.str());
  }

  std::sort(metrics.begin(), metrics.end(),
            [](const MetricRow& a, const MetricRow& b) { return std::tie(a.worker, a.step) < std::tie(b.worker, b.step); });
  const std::vector<std::string> metric_lines = lines_of((dir / "metrics.csv").string());
  REQUIRE(metric_lines.size() == metrics.size() + 1);
  for (size_t i = 0; i < metrics.size(); ++i) {
    const std::string prefix = std::to_string(metrics[i].worker) + ',' + std::to_string(metrics[i].step) + ',';
    CHECK(metric_lines[i + 1].substr(metric_lines[i + 1].find(',') + 1, prefix.size()) == prefix);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("recorder: reserve is a hint; where the address space is too small for it, rows still record") {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // This process's address space now plus 64 MiB: far less than the 1.6 GB that reserve's cap of 2^24
    // rows of each kind asks for.
    std::ifstream statm("/proc/self/statm");
    size_t pages = 0;
    statm >> pages;
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{64} << 20);
    const rlimit address_space{limit, limit};
    if (setrlimit(RLIMIT_AS, &address_space) != 0) std::_Exit(2);
    try {
      Recorder recorder;
      recorder.reserve(size_t{1} << 30, size_t{1} << 30);
      recorder.event({0, EventKind::compute, 0, 1, 0, -1});
      recorder.metric({1, 0, 1, 64, 0.5});
      std::_Exit(recorder.events().size() == 1 && recorder.metrics().size() == 1 ? 0 : 1);
    } catch (...) {
      std::_Exit(3);  // reserve let its bad_alloc out
    }
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
