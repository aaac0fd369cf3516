// trace.json and links.csv of a simulated run: the structure trace viewers need (every span has ph,
// ts, dur, pid, tid; each track in time order and properly nested), and bytes that add up to
// events.csv — per span, per worker and per link.
#include "report/trace.hpp"

#include <sys/wait.h>
#include <torch/utils.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sim/platform.hpp"
#include "sim/simulate.hpp"
#include "tests/doctest_torch.hpp"
#include "tests/tiny_run.hpp"

using namespace locosim;
using nlohmann::json;

namespace {

std::vector<std::vector<std::string>> read_csv(const std::string& path, std::string* header = nullptr) {
  std::ifstream in(path);
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  if (header) *header = line;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    std::string f;
    while (std::getline(ss, f, ',')) fields.push_back(f);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    rows.push_back(fields);
  }
  return rows;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return json::parse(in);
}

// A trace time (microseconds) in whole nanoseconds, as trace viewers read it.
int64_t ns(const json& us) { return std::llround(us.get<double>() * 1e3); }

// Checks one track's spans (in file order): start times never decrease, and each span either starts
// after the spans still open have ended or ends inside the innermost of them.
void check_track(const std::vector<const json*>& spans) {
  std::vector<int64_t> open_ends;
  int64_t last_ts = -1;
  for (const json* s : spans) {
    const int64_t ts = ns((*s)["ts"]), end = ts + ns((*s)["dur"]);
    CHECK(ts >= last_ts);
    last_ts = ts;
    while (!open_ends.empty() && open_ends.back() <= ts) open_ends.pop_back();
    if (!open_ends.empty()) CHECK(end <= open_ends.back());
    open_ends.push_back(end);
  }
}

}  // namespace

TEST_CASE("trace: every span is complete, every track ordered, and bytes add up to events.csv") {
  torch::set_num_threads(1);
  namespace fs = std::filesystem;
  const std::string dir = testing::tiny_scenario_dir("trace-test");
  testing::write_text(dir + "/scenario.yaml", testing::tiny_scenario_yaml("report: {link_bucket: 2 s}\n"));
  const Scenario scenario = load_scenario(dir + "/scenario.yaml");
  REQUIRE(scenario.link_bucket_s == 2);
  const std::string out = dir + "/run";
  fs::create_directories(out);
  simulate_policy(scenario, scenario.policies.at(1), out);  // diloco: compute, then syncs every 4 steps

  const json trace = read_json(out + "/trace.json");
  REQUIRE(trace.contains("traceEvents"));
  std::map<std::pair<int, int>, std::vector<const json*>> tracks;
  std::set<int> named_processes;
  std::set<std::pair<int, int>> named_threads;
  std::map<std::string, double> span_bytes;                  // by kind
  std::map<int, double> compute_us;                          // by worker
  std::map<std::string, std::vector<const json*>> counters;  // by link
  size_t spans = 0;
  for (const json& e : trace["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") named_processes.insert(e["pid"].get<int>());
    if (ph == "M" && e["name"] == "thread_name") named_threads.insert({e["pid"].get<int>(), e["tid"].get<int>()});
    if (ph == "C") counters[e["name"]].push_back(&e);
    if (ph != "X") continue;
    ++spans;
    for (const char* field : {"ts", "dur", "pid", "tid", "name"}) REQUIRE_MESSAGE(e.contains(field), field);
    CHECK(e["dur"].get<double>() >= 0);
    tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(&e);
    const std::string kind = e["name"];
    if (kind == "send" || kind == "recv") span_bytes[kind] += e["args"]["bytes"].get<double>();
    if (kind == "compute") compute_us[e["pid"].get<int>() - 1] += e["dur"].get<double>();
  }
  for (const auto& [track, list] : tracks) {
    INFO("pid " << track.first << " tid " << track.second);
    check_track(list);
    CHECK(named_processes.count(track.first) == 1);
    CHECK(named_threads.count(track) == 1);
  }

  std::string header;
  const auto events = read_csv(out + "/events.csv", &header);
  CHECK(header == "worker,kind,start_s,end_s,bytes,peer");
  CHECK(spans == events.size());
  std::map<std::string, double> csv_bytes;
  std::map<int, double> csv_compute_s;
  std::map<std::string, double> link_expected;  // link -> bytes of the sends routed over it
  for (const auto& row : events) {
    const std::string& kind = row.at(1);
    const double bytes = std::stod(row.at(4));
    if (kind == "send" || kind == "recv") csv_bytes[kind] += bytes;
    if (kind == "compute") csv_compute_s[std::stoi(row[0])] += std::stod(row[3]) - std::stod(row[2]);
    if (kind == "send") {
      for (const auto& link : route_link_names(scenario.platform, std::stoul(row[0]), std::stoul(row[5]))) {
        link_expected[link] += bytes;
      }
    }
  }
  CHECK(csv_bytes["send"] > 0);
  CHECK(span_bytes["send"] == doctest::Approx(csv_bytes["send"]).epsilon(1e-9));
  CHECK(span_bytes["recv"] == doctest::Approx(csv_bytes["recv"]).epsilon(1e-9));
  REQUIRE(compute_us.size() == 3);
  for (const auto& [worker, us] : compute_us) CHECK(us / 1e6 == doctest::Approx(csv_compute_s[worker]).epsilon(1e-6));

  // links.csv: every link carries what was sent over it; the trace's counters say the same in Mbps.
  const auto links = read_csv(out + "/links.csv", &header);
  CHECK(header == "link,direction,worker,host,start_s,end_s,bytes,utilization,capacity_bps");
  std::map<std::string, double> link_bytes;
  for (const auto& row : links) {
    const double start_s = std::stod(row.at(4)), end_s = std::stod(row.at(5));
    CHECK(std::fmod(start_s, 2.0) == 0);  // report.link_bucket: 2 s
    CHECK(end_s - start_s <= 2);
    link_bytes[row.at(0)] += std::stod(row.at(6));
    CHECK(std::stod(row.at(7)) <= 1 + 1e-6);
  }
  REQUIRE(link_bytes.size() == 6);  // three hosts, an uplink and a downlink each
  for (const auto& [link, bytes] : link_bytes) {
    INFO(link);
    CHECK(bytes == doctest::Approx(link_expected[link]).epsilon(1e-6));
    if (bytes == 0) continue;
    REQUIRE(counters.count(link) == 1);
    double counted = 0;  // Mbps held until the next sample
    const auto& samples = counters[link];
    for (size_t i = 0; i + 1 < samples.size(); ++i) {
      const double dt_us = (*samples[i + 1])["ts"].get<double>() - (*samples[i])["ts"].get<double>();
      CHECK(dt_us > 0);
      counted += (*samples[i])["args"]["Mbps"].get<double>() * 1e6 / 8 * dt_us / 1e6;
    }
    CHECK(counted == doctest::Approx(bytes).epsilon(1e-6));
  }
}

TEST_CASE("trace: overlapping spans of one kind get tracks of their own, nested ones share one") {
  Recorder r;
  r.event({0, EventKind::compute, 0, 2, 0, -1});
  r.event({0, EventKind::wait, 2, 3, 0, -1});
  r.event({0, EventKind::send, 0, 5, 100, 1});
  r.event({0, EventKind::send, 0, 4, 200, 1});    // nested in the first
  r.event({0, EventKind::send, 4.5, 6, 300, 1});  // overlaps the first without nesting: a second track
  r.event({1, EventKind::recv, 0, 5, 100, 0});
  r.event({2, EventKind::recv, 1, 2, 400, 0});    // a relay, recorded as worker world_size
  const std::string path = (std::filesystem::temp_directory_path() / "locosim-trace-lanes.json").string();
  write_trace_json(r, {"worker 0 (a)", "worker 1 (b)"}, nullptr, path);
  const json trace = read_json(path);

  std::map<int, std::string> process;
  std::map<std::pair<int, int>, std::string> thread;
  std::map<double, int> send_tid;  // by bytes
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process[e["pid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      thread[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
    }
    if (e["ph"] == "X" && e["name"] == "send") send_tid[e["args"]["bytes"].get<double>()] = e["tid"].get<int>();
    if (e["ph"] == "X" && e["name"] == "compute") CHECK(e["dur"].get<double>() == doctest::Approx(2e6));
    CHECK(e["ph"] != "C");  // no link report: no counters
  }
  CHECK(process[1] == "worker 0 (a)");
  CHECK(process[3] == "relay (worker 2)");
  CHECK(send_tid[100] == send_tid[200]);
  CHECK(send_tid[300] != send_tid[100]);
  CHECK(thread[{1, send_tid[100]}] == "send");
  CHECK(thread[{1, send_tid[300]}] == "send 2");
  CHECK(thread.size() == 5);  // worker 0: compute/wait, send, send 2; worker 1: recv; relay: recv
}

TEST_CASE("trace: each event is the text nlohmann::json writes for it, names to escape and odd numbers included") {
  // The spans and counters are formatted by hand (report/trace.cpp): each line must be what parsing it
  // and dumping it again gives, byte for byte, as when every event was built as a json object.
  Recorder r;
  r.event({0, EventKind::compute, 0, 1.1255919, 0, -1});
  r.event({0, EventKind::wait, 1.1255919, 343.971959, 0, -1});
  r.event({0, EventKind::send, 5.62795949, 245.647959, 300000000, 2});
  r.event({0, EventKind::recv, 1e-7, 3e-5, 0.5, 2});
  r.event({1, EventKind::join, 7, 7.25, 1234567.875, 0});
  r.event({1, EventKind::away, 8, 1e9, 0, -1});
  r.event({1, EventKind::link_off, 9, 10, 0, -1});
  r.event({2, EventKind::recv, 0, 2.5e-10, 1e300, 1});
  LinkReport links;
  links.bucket_s = 0.1;
  links.end_s = 0.25;
  for (const std::string name : {"peer \"0\".up", "back\\slash", "caf\u00e9 \u2192 wan", "tab\there", "plain.down"}) {
    LinkTraffic l;
    l.link = name;
    l.bytes = {1e6 / 3, 0, 12.5};
    if (name == "plain.down") l.capacity_bytes = {2e6, 0, 1e6 / 7};
    links.links.push_back(l);
  }
  const std::string path = (std::filesystem::temp_directory_path() / "locosim-trace-text.json").string();
  write_trace_json(r, {"worker 0 (h\u00f4te \"a\")", "worker 1 (b)"}, &links, path);
  std::ifstream in(path);
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  CHECK(line == R"({"displayTimeUnit":"ms","otherData":{"clock":"simulated time"},"traceEvents":[)");
  int events = 0, spans = 0, counters = 0;
  while (std::getline(in, line) && line != "]}") {
    if (!line.empty() && line.back() == ',') line.pop_back();
    const json e = json::parse(line);
    CHECK(e.dump() == line);
    if (e["ph"] != "M") {  // times, bytes and rates are doubles (written "300000000.0"), ids integers
      CHECK(e["ts"].is_number_float());
      CHECK(e["pid"].is_number_integer());
      CHECK(e["tid"].is_number_integer());
      if (e["ph"] == "X") CHECK(e["dur"].is_number_float());
      if (e.contains("args") && e["args"].contains("bytes")) CHECK(e["args"]["bytes"].is_number_float());
      if (e.contains("args") && e["args"].contains("peer")) CHECK(e["args"]["peer"].is_number_integer());
      if (e.contains("args") && e["args"].contains("Mbps")) CHECK(e["args"]["Mbps"].is_number_float());
    }
    ++events;
    spans += e["ph"] == "X";
    counters += e["ph"] == "C";
  }
  CHECK(line == "]}");
  CHECK(spans == 8);
  CHECK(counters == 5 * 4 + 3);  // 3 buckets and a closing zero per link; the changed link's capacity
  CHECK(events > spans + counters);  // and the metadata
  const json trace = read_json(path);  // the whole file is one JSON document
  CHECK(trace["traceEvents"].size() == static_cast<size_t>(events));
}

TEST_CASE("trace: report.trace collectives drops the message spans and keeps the rest, none writes no trace") {
  torch::set_num_threads(1);
  namespace fs = std::filesystem;
  const std::string dir = testing::tiny_scenario_dir("trace-detail");
  std::map<std::string, std::map<std::string, int>> spans;  // by detail, by span name
  for (const std::string detail : {"messages", "collectives", "none"}) {
    testing::write_text(dir + "/" + detail + ".yaml",
                        testing::tiny_scenario_yaml("report: {trace: " + detail + "}\n"));
    const Scenario scenario = load_scenario(dir + "/" + detail + ".yaml");
    const std::string out = dir + "/" + detail;
    fs::create_directories(out);
    const pid_t child = fork();  // a process per run: SimGrid allows one Engine per process
    REQUIRE(child >= 0);
    if (child == 0) {
      try {
        simulate_policy(scenario, scenario.policies.at(1), out);  // diloco
      } catch (...) {
        std::_Exit(1);
      }
      std::_Exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    CHECK(fs::exists(out + "/events.csv"));
    if (detail == "none") {
      CHECK(!fs::exists(out + "/trace.json"));
      continue;
    }
    const json trace = read_json(out + "/trace.json");
    for (const json& e : trace["traceEvents"]) {
      if (e["ph"] == "X") ++spans[detail][e["name"].get<std::string>()];
    }
  }
  CHECK(spans["messages"]["send"] > 0);
  CHECK(spans["messages"]["recv"] > 0);
  CHECK(spans["collectives"].count("send") == 0);
  CHECK(spans["collectives"].count("recv") == 0);
  for (const char* kept : {"compute", "wait"}) {
    CAPTURE(kept);
    CHECK(spans["collectives"][kept] > 0);
    CHECK(spans["collectives"][kept] == spans["messages"][kept]);
  }
}
