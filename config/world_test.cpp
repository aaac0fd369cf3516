// Tests of parse_world: the profiles a valid world section makes (points exactly), merging, churn,
// traces, and the file:line, dotted key and constraint of each error.
#include "config/world.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "config/platform_test_util.hpp"
#include "config/section.hpp"
#include <doctest/doctest.h>

using namespace locosim;
using platform_test::contains;
using platform_test::error_of;
namespace fs = std::filesystem;

namespace {

// Workers vol-0..vol-7 (own links), volunteer, dc (site eu), lab (site us); a relay; wan eu<->us.
const char* kPlatform =
    "accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.5}}\n"
    "sites:\n"
    "  eu: {lan: {bandwidth: 10 Gbps, latency: 5 us}, uplink: {bandwidth: 1 Gbps, latency: 5 ms},\n"
    "       downlink: {bandwidth: 1 Gbps, latency: 6 ms}}\n"
    "  us: {lan: {bandwidth: 10 Gbps, latency: 7 us}, uplink: {bandwidth: 1 Gbps, latency: 5 ms},\n"
    "       downlink: {bandwidth: 1 Gbps, latency: 6 ms}}\n"
    "wan:\n"
    "  - {from: eu, to: us, bandwidth: 935 Mbps, latency: 40 ms}\n"
    "hosts:\n"
    "  - {name: vol, accelerator: gpu, count: 8, uplink: {bandwidth: 20 Mbps, latency: 10 ms},\n"
    "     downlink: {bandwidth: 200 Mbps, latency: 12 ms}}\n"
    "  - {name: volunteer, accelerator: gpu, uplink: {bandwidth: 20 Mbps, latency: 10 ms},\n"
    "     downlink: {bandwidth: 200 Mbps, latency: 12 ms}}\n"
    "  - {name: dc, site: eu, accelerator: gpu}\n"
    "  - {name: lab, site: us, accelerator: gpu}\n"
    "relay: {uplink: {bandwidth: 10 Gbps, latency: 1 ms}, downlink: {bandwidth: 10 Gbps, latency: 2 ms}}\n";

const PlatformSpec& platform() {
  static const PlatformSpec p = platform_test::parse(kPlatform);
  return p;
}

// A scratch folder for the scenario "file" and its traces; removed at the end of the test.
struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("locosim-world-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string scenario() const { return (dir / "s.yaml").string(); }
  std::string write(const std::string& name, const std::string& text) const {
    fs::create_directories((dir / name).parent_path());
    std::ofstream((dir / name).string(), std::ios::binary) << text;
    return (dir / name).string();
  }
};

// Parses `yaml` (line 1 is "world:") as the scenario file `file`.
WorldSpec world_of(const std::string& yaml, const std::string& file = "s.yaml", uint64_t seed = 1) {
  Section top = Section::load_string(yaml, file);
  Section world = top.child("world", /*optional=*/true);
  return parse_world(world, platform(), seed);
}

ConfigError world_error(const std::string& yaml, const std::string& file = "s.yaml") {
  return error_of([&] { world_of(yaml, file); });
}

using Points = std::vector<std::pair<double, double>>;

}  // namespace

TEST_CASE("world: link_names lists every link of the platform, and routes use only those") {
  const std::vector<std::string> names = link_names(platform());
  std::vector<std::string> expected;
  for (int i = 0; i < 8; ++i) {
    expected.push_back("vol-" + std::to_string(i) + ".up");
    expected.push_back("vol-" + std::to_string(i) + ".down");
  }
  for (const char* n : {"volunteer.up", "volunteer.down", "eu.lan.dc.up", "eu.lan.dc.down", "us.lan.lab.up",
                        "us.lan.lab.down", "relay.up", "relay.down", "eu.up", "eu.down", "us.up", "us.down",
                        "wan.eu->us", "wan.us->eu"}) {
    expected.push_back(n);
  }
  CHECK(names == expected);
  const auto links = platform_links(platform());
  REQUIRE(links.size() == names.size());
  CHECK(links[18].first == "eu.lan.dc.up");
  CHECK(links[18].second.latency_s == doctest::Approx(5e-6));
  CHECK(links.back().second.bandwidth_bps == doctest::Approx(935e6));

  const PlatformSpec& p = platform();
  for (size_t i = 0; i < p.endpoint_count(); ++i) {
    for (size_t j = 0; j < p.endpoint_count(); ++j) {
      if (i == j) continue;
      for (const auto& link : route_link_names(p, i, j)) {
        CAPTURE(link);
        CHECK(std::find(names.begin(), names.end(), link) != names.end());
      }
    }
  }
  using Names = std::vector<std::string>;
  CHECK(route_link_names(p, 0, 1) == Names{"vol-0.up", "vol-1.down"});
  CHECK(route_link_names(p, 9, 10) == Names{"eu.lan.dc.up", "wan.eu->us", "us.lan.lab.down"});
  CHECK(route_link_names(p, 0, 9) == Names{"vol-0.up", "eu.down", "eu.lan.dc.down"});
  CHECK(route_link_names(p, 11, 9) == Names{"relay.up", "eu.down", "eu.lan.dc.down"});  // 11: the relay
}

TEST_CASE("world: an absent or empty world section changes nothing") {
  WorldSpec none = world_of("other: 1\n");
  CHECK(none.empty());
  CHECK(none.failure_timeout_s == 10);
  Section top = Section::load_string("x: 1\n", "s.yaml");
  Section world = top.child("world", /*optional=*/true);
  parse_world(world, platform(), 1);
  // Defaults are written to the resolved tree, as for every other section.
  CHECK(contains(top.resolved_yaml(), "failure_timeout: 10 s"));
}

TEST_CASE("world: a full example parses into the expected profiles and churn groups") {
  Scratch scratch("full");
  scratch.write("traces/uplink.csv",
                "time_s,value\n"        // line 1: header
                "# measured by hand\n"  // line 2
                "0,1\n"
                "\n"
                "3600, 0.25  # evening\n"
                "7200,0.5\r\n");
  scratch.write("gpu.csv", "10,0.9\n20,1\n");
  scratch.write("lat.csv", "0,0.5\n");
  const std::string yaml =
      "world:\n"                                                            // 1
      "  failure_timeout: 30 s\n"                                           // 2
      "  events:\n"                                                         // 3
      "    - {host: vol-3, at: 10 min, until: 30 min, speed: 0.3}\n"        // 4
      "    - {host: vol-5, at: 20 min, until: 40 min, state: off}\n"        // 5
      "    - {link: vol-1.up, at: 1 h, until: 2 h, bandwidth: 0.5}\n"       // 6
      "    - {link: wan.eu->us, at: 1 h, latency: 80 ms}\n"                 // 7
      "    - {link: vol-2.down, at: 5 min, until: 6 min, state: off}\n"     // 8
      "  traces:\n"                                                         // 9
      "    - {link: vol-7.up, bandwidth: traces/uplink.csv, period: 24 h}\n"  // 10
      "    - {host: vol-2, speed: gpu.csv}\n"                               // 11
      "    - {link: eu.up, latency: lat.csv}\n"                             // 12
      "  churn:\n"                                                          // 13
      "    - {hosts: [dc, lab], mtbf: 2 h, mttr: 30 min}\n"                 // 14
      "    - {hosts: [\"vol-6\"], mtbf: 1 h, mttr: 1 min, start: 10 min, seed: 42}\n";  // 15
  const std::string file = scratch.scenario();
  WorldSpec w = world_of(yaml, file, 7);
  CHECK_FALSE(w.empty());
  CHECK(w.failure_timeout_s == 30);
  REQUIRE(w.profiles.size() == 8);

  CHECK(w.profiles[0].target == "vol-3");
  CHECK(w.profiles[0].what == WorldResource::host_speed);
  CHECK(w.profiles[0].points == Points{{600, 0.3}, {1800, 1}});
  CHECK(w.profiles[0].period_s < 0);
  CHECK(w.profiles[0].source == file + ":4");

  CHECK(w.profiles[1].target == "vol-5");
  CHECK(w.profiles[1].what == WorldResource::host_state);
  CHECK(w.profiles[1].points == Points{{1200, 0}, {2400, 1}});

  CHECK(w.profiles[2].target == "vol-1.up");
  CHECK(w.profiles[2].what == WorldResource::link_bandwidth);
  CHECK(w.profiles[2].points == Points{{3600, 0.5}, {7200, 1}});

  CHECK(w.profiles[3].target == "wan.eu->us");
  CHECK(w.profiles[3].what == WorldResource::link_latency);
  CHECK(w.profiles[3].points == Points{{3600, 80 * 1e-3}});  // no until: no return to nominal

  CHECK(w.profiles[4].target == "vol-2.down");
  CHECK(w.profiles[4].what == WorldResource::link_state);
  CHECK(w.profiles[4].points == Points{{300, 0}, {360, 1}});
  CHECK(w.profiles[4].source == file + ":8");

  CHECK(w.profiles[5].target == "vol-7.up");
  CHECK(w.profiles[5].what == WorldResource::link_bandwidth);
  CHECK(w.profiles[5].points == Points{{0, 1}, {3600, 0.25}, {7200, 0.5}});
  CHECK(w.profiles[5].period_s == 86400);
  CHECK(w.profiles[5].source == file + ":10 (trace " + (scratch.dir / "traces/uplink.csv").string() + ")");

  CHECK(w.profiles[6].target == "vol-2");
  CHECK(w.profiles[6].what == WorldResource::host_speed);
  CHECK(w.profiles[6].points == Points{{10, 0.9}, {20, 1}});
  CHECK(w.profiles[6].period_s < 0);

  CHECK(w.profiles[7].target == "eu.up");
  CHECK(w.profiles[7].what == WorldResource::link_latency);
  CHECK(w.profiles[7].points == Points{{0, 0.5}});

  REQUIRE(w.churn.size() == 2);
  CHECK(w.churn[0].hosts == std::vector<int>{9, 10});
  CHECK(w.churn[0].mtbf_s == 7200);
  CHECK(w.churn[0].mttr_s == 1800);
  CHECK(w.churn[0].start_s == 0);
  CHECK(w.churn[0].seed == churn_seed(7, 0));
  CHECK(w.churn[0].source == file + ":14");
  CHECK(w.churn[1].hosts == std::vector<int>{6});
  CHECK(w.churn[1].start_s == 600);
  CHECK(w.churn[1].seed == 42);
}

TEST_CASE("world: events on one target merge into one profile that returns to nominal between them") {
  const std::string yaml =
      "world:\n"
      "  events:\n"
      "    - {host: vol-3, at: 30 min, speed: 0.7}\n"                     // 3: open, last
      "    - {host: vol-3, at: 0 s, until: 10 min, speed: 0.5}\n"         // 4
      "    - {link: eu.up, at: 1 min, until: 2 min, latency: 100 ms}\n"   // 5
      "    - {host: vol-3, at: 10 min, until: 20 min, speed: 0.2}\n"      // 6: starts as 4 ends
      "    - {link: eu.lan.dc.up, at: 1 s, until: 2 s, latency: 1 s}\n"  // 7
      "    - {host: vol-3, at: 25 min, until: 30 min, speed: 1.5}\n";     // 8: ends as 3 starts
  WorldSpec w = world_of(yaml);
  REQUIRE(w.profiles.size() == 3);
  CHECK(w.profiles[0].target == "vol-3");
  CHECK(w.profiles[0].points == Points{{0, 0.5}, {600, 0.2}, {1200, 1}, {1500, 1.5}, {1800, 0.7}});
  CHECK(w.profiles[0].source == "s.yaml:4, s.yaml:6, s.yaml:8, s.yaml:3");  // in time order
  // Latency returns to the link's own: eu's uplink 5 ms, eu's LAN 5 us.
  CHECK(w.profiles[1].points == Points{{60, 100 * 1e-3}, {120, 5 * 1e-3}});
  CHECK(w.profiles[2].points == Points{{1, 1}, {2, 5 * 1e-6}});
}

TEST_CASE("world: churn hosts are exact names or a prefix and '*', and overlapping entries are one set") {
  auto hosts_of = [](const std::string& list) {
    return world_of("world:\n  churn:\n    - {hosts: " + list + ", mtbf: 1 h, mttr: 1 h}\n").churn.at(0).hosts;
  };
  CHECK(hosts_of("[\"vol-*\"]") == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});  // not volunteer
  CHECK(hosts_of("[\"vol*\"]") == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(hosts_of("[lab, \"vol-1\", \"vol-*\"]") == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 10});
  CHECK(hosts_of("[\"*\"]") == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(hosts_of("[volunteer]") == std::vector<int>{8});
}

TEST_CASE("world: churn seeds are derived from the scenario seed and the entry, and recorded") {
  const std::string yaml =
      "world:\n"
      "  churn:\n"
      "    - {hosts: [\"vol-0\"], mtbf: 1 h, mttr: 1 h}\n"
      "    - {hosts: [\"vol-1\"], mtbf: 1 h, mttr: 1 h}\n"
      "    - {hosts: [\"vol-2\"], mtbf: 1 h, mttr: 1 h, seed: 0}\n";
  WorldSpec a = world_of(yaml, "s.yaml", 1);
  WorldSpec b = world_of(yaml, "s.yaml", 2);
  REQUIRE(a.churn.size() == 3);
  CHECK(a.churn[0].seed == churn_seed(1, 0));
  CHECK(a.churn[1].seed == churn_seed(1, 1));
  CHECK(a.churn[2].seed == 0);  // given: used as is
  CHECK(a.churn[0].seed != a.churn[1].seed);
  CHECK(b.churn[0].seed != a.churn[0].seed);
  CHECK(b.churn[2].seed == 0);
  CHECK(world_of(yaml, "s.yaml", 1).churn[1].seed == a.churn[1].seed);  // deterministic
  // Pinned: changing the derivation changes every run with churn.
  CHECK(churn_seed(1, 0) == 2656019608464730754ULL);
  for (uint64_t seed : {0ULL, 1ULL, ~0ULL}) {
    for (size_t i = 0; i < 4; ++i) CHECK(churn_seed(seed, i) < (1ULL << 63));  // fits a YAML integer
  }

  // The derived seed is written to the resolved tree, so that resolved.yaml replays the same churn.
  Section top = Section::load_string(yaml, "s.yaml");
  Section world = top.child("world");
  parse_world(world, platform(), 1);
  CHECK(contains(top.resolved_yaml(), "seed: " + std::to_string(churn_seed(1, 0))));
}

TEST_CASE("world: traces take a header, comments, blank lines and CRLF, and state values 0 or 1") {
  Scratch scratch("trace");
  scratch.write("state.csv", "# a host that leaves twice\nt,up\n100,0\n200,1\n300,0 # gone\n\n400,1\n");
  scratch.write("rel/lat.csv", "0, 0.1\r\n5 ,0\r\n");
  WorldSpec w = world_of(
      "world:\n"
      "  traces:\n"
      "    - {host: vol-4, state: state.csv, period: 1000 s}\n"
      "    - {link: wan.us->eu, latency: rel/../rel/lat.csv}\n",
      scratch.scenario());
  REQUIRE(w.profiles.size() == 2);
  CHECK(w.profiles[0].what == WorldResource::host_state);
  CHECK(w.profiles[0].points == Points{{100, 0}, {200, 1}, {300, 0}, {400, 1}});
  CHECK(w.profiles[0].period_s == 1000);
  CHECK(w.profiles[1].points == Points{{0, 0.1}, {5, 0}});
  CHECK(w.profiles[1].period_s < 0);
}

namespace {

struct Case {
  std::string yaml;  // the world section's entries, below "world:\n"
  std::string key;
  int line;
  std::string message;
};

void check_cases(const std::vector<Case>& cases, const std::string& file = "s.yaml") {
  for (const Case& c : cases) {
    CAPTURE(c.yaml);
    ConfigError e = world_error("world:\n" + c.yaml, file);
    INFO(std::string(e.what()));
    CHECK(e.key() == c.key);
    CHECK(e.line() == c.line);
    CHECK(contains(e.what(), file + ":" + std::to_string(c.line) + ":"));
    CHECK(contains(e.what(), c.key + ": "));
    CHECK(contains(e.what(), c.message));
  }
}

}  // namespace

TEST_CASE("world: bad event values name the entry's key and the constraint") {
  const std::string ev = "  events:\n    - {host: vol-3, ";  // the entry is on line 3
  check_cases({
      {ev + "at: -1 min, speed: 0.5}\n", "world.events[0].at", 3, "must be in [0, 1000000000] s, got '-1 min'"},
      {ev + "at: 2e9 s, speed: 0.5}\n", "world.events[0].at", 3, "must be in [0, 1000000000] s"},
      {ev + "at: 10 min, until: 5 min, speed: 0.5}\n", "world.events[0].until", 3, "must be after at (600 s), got 300 s"},
      {ev + "at: 10 min, until: 10 min, speed: 0.5}\n", "world.events[0].until", 3, "must be after at (600 s), got 600 s"},
      {ev + "at: 10, speed: 0.5}\n", "world.events[0].at", 3, "with no unit"},
      {ev + "at: 1 s, speed: 0}\n", "world.events[0].speed", 3, "must be in [0.001, 100], got 0"},
      {ev + "at: 1 s, speed: -0.5}\n", "world.events[0].speed", 3, "must be in [0.001, 100]"},
      {ev + "at: 1 s, state: on}\n", "world.events[0].state", 3, "must be off, got 'on'"},
      {ev + "at: 1 s, bandwidth: 0.5}\n", "world.events[0].bandwidth", 3,
       "bandwidth is not something a host has: it has speed or state"},
      {ev + "at: 1 s, speed: 0.5, state: off}\n", "world.events[0].state", 3, "got both speed and state"},
      {ev + "at: 1 s}\n", "world.events[0]", 3, "a host entry sets one of speed or state, got none"},
      {ev + "at: 1 s, speed: 0.5, sped: 1}\n", "world.events[0].sped", 3, "did you mean 'speed'?"},
      {"  events:\n    - {link: vol-1.up, at: 1 s, bandwidth: 0}\n", "world.events[0].bandwidth", 3,
       "must be in [0.001, 100]"},
      {"  events:\n    - {link: vol-1.up, at: 1 s, bandwidth: 101}\n", "world.events[0].bandwidth", 3,
       "must be in [0.001, 100], got 101"},
      {"  events:\n    - {link: vol-1.up, at: 1 s, latency: 2 h}\n", "world.events[0].latency", 3,
       "must be in [0, 3600] s"},
      {"  events:\n    - {link: vol-1.up, at: 1 s, latency: -1 ms}\n", "world.events[0].latency", 3,
       "must be in [0, 3600] s"},
      {"  events:\n    - {link: vol-1.up, at: 1 s, speed: 0.5}\n", "world.events[0].speed", 3,
       "speed is not something a link has: it has bandwidth, latency or state"},
      {"  events:\n    - {link: vol-1.up, host: vol-1, at: 1 s, speed: 0.5}\n", "world.events[0].link", 3,
       "give host or link, not both"},
      {"  events:\n    - {at: 1 s, speed: 0.5}\n", "world.events[0]", 3, "needs host: (a worker's name) or link:"},
      {"  failure_timeout: 0 s\n", "world.failure_timeout", 2, "must be in [0.001, 3600] s"},
      {"  failure_timeout: 2 h\n", "world.failure_timeout", 2, "must be in [0.001, 3600] s"},
      {"  evnts: []\n", "world.evnts", 2, "did you mean 'events'?"},
      {"  events: {host: vol-1}\n", "world.events", 2, "must be a list"},
  });
}

TEST_CASE("world: unknown hosts and links list some of the valid ones and the count") {
  check_cases({
      {"  events:\n    - {host: vol-9, at: 1 s, speed: 0.5}\n", "world.events[0].host", 3,
       "host 'vol-9' is not a worker of platform 'p.yaml' (workers: vol-0, vol-1, vol-2, vol-3, vol-4, ... (11 in all))"},
      {"  events:\n    - {host: relay, at: 1 s, speed: 0.5}\n", "world.events[0].host", 3,
       "'relay' is the relay, not a worker"},
      {"  events:\n    - {link: vol-1.upp, at: 1 s, state: off}\n", "world.events[0].link", 3,
       "link 'vol-1.upp' is not a link of platform 'p.yaml' (links: vol-0.up, vol-0.down, vol-1.up, vol-1.down, "
       "vol-2.up, ... (30 in all);"},
      {"  events:\n    - {link: eu.lan.vol-1.up, at: 1 s, state: off}\n", "world.events[0].link", 3,
       "is not a link of platform"},
      {"  traces:\n    - {host: nobody, speed: x.csv}\n", "world.traces[0].host", 3, "is not a worker"},
  });
}

TEST_CASE("world: overlapping events on one target and resource name both entries") {
  check_cases({
      {"  events:\n"
       "    - {host: vol-3, at: 10 min, until: 30 min, speed: 0.3}\n"   // 3
       "    - {host: vol-3, at: 20 min, speed: 0.5}\n",                 // 4
       "world.events[1].at", 4,
       "this event (from 1200 s) overlaps world.events[0] (s.yaml:3), which sets the speed of host vol-3 from 600 s "
       "until 1800 s: events on one target and resource may not overlap"},
      // Without until, an event lasts to the end of the run; the later-starting entry is the one reported.
      {"  events:\n"
       "    - {link: vol-1.up, at: 1 h, until: 2 h, state: off}\n"      // 3
       "    - {link: vol-2.up, at: 0 s, state: off}\n"                  // 4: another link: no conflict
       "    - {link: vol-1.up, at: 0 s, state: off}\n",                 // 5
       "world.events[0].at", 3,
       "overlaps world.events[2] (s.yaml:5), which sets the state of link vol-1.up from 0 s until the end of the run"},
      {"  events:\n"
       "    - {link: vol-1.up, at: 1 h, bandwidth: 0.5}\n"
       "    - {link: vol-1.up, at: 1 h, until: 2 h, bandwidth: 0.2}\n",
       "world.events[1].at", 4, "overlaps world.events[0] (s.yaml:3)"},
  });
  // Different resources of one target, and back-to-back events, do not overlap.
  CHECK(world_of("world:\n  events:\n"
                 "    - {host: vol-3, at: 10 min, until: 30 min, speed: 0.3}\n"
                 "    - {host: vol-3, at: 20 min, state: off}\n"
                 "    - {host: vol-3, at: 30 min, speed: 0.5}\n")
            .profiles.size() == 2);
}

TEST_CASE("world: two sources for one target and resource name the other one") {
  Scratch scratch("sources");
  scratch.write("a.csv", "0,0.5\n");
  scratch.write("on.csv", "0,1\n");
  const std::string file = scratch.scenario();
  check_cases(
      {
          {"  events:\n    - {host: vol-2, at: 1 s, speed: 0.5}\n"
           "  traces:\n    - {host: vol-2, speed: a.csv}\n",
           "world.traces[0].host", 5,
           "the speed of host vol-2 is already set by world.events[0] (" + file + ":3): a target's resource takes its "
           "values from events or from one trace, not both"},
          {"  traces:\n    - {link: vol-1.up, bandwidth: a.csv}\n    - {link: vol-1.up, bandwidth: a.csv}\n",
           "world.traces[1].link", 4, "the bandwidth of link vol-1.up is already set by world.traces[0] (" + file + ":3)"},
          {"  events:\n    - {host: vol-5, at: 20 min, until: 40 min, state: off}\n"
           "  churn:\n    - {hosts: [\"vol-*\"], mtbf: 2 h, mttr: 30 min}\n",
           "world.churn[0].hosts", 5,
           "host vol-5 would churn, but its state is already set by world.events[0] (" + file + ":3)"},
          {"  churn:\n    - {hosts: [lab], mtbf: 2 h, mttr: 30 min}\n    - {hosts: [\"l*\"], mtbf: 2 h, mttr: 30 min}\n",
           "world.churn[1].hosts", 4, "host lab would churn, but its state is already set by world.churn[0] (" + file + ":3)"},
          {"  traces:\n    - {host: dc, state: on.csv}\n  churn:\n    - {hosts: [dc], mtbf: 2 h, mttr: 30 min}\n",
           "world.churn[0].hosts", 5, "already set by world.traces[0]"},
      },
      file);
  // A speed trace and churn on one host set different things.
  CHECK(world_of("world:\n  traces:\n    - {host: dc, speed: a.csv}\n  churn:\n    - {hosts: [dc], mtbf: 2 h, mttr: 1 h}\n",
                 file)
            .churn.size() == 1);
}

TEST_CASE("world: bad churn entries") {
  check_cases({
      {"  churn:\n    - {hosts: [\"v*l\"], mtbf: 1 h, mttr: 1 h}\n", "world.churn[0].hosts", 3,
       "hosts[0] 'v*l': '*' may only end a name"},
      {"  churn:\n    - {hosts: [\"vol-1\", \"gpu-*\"], mtbf: 1 h, mttr: 1 h}\n", "world.churn[0].hosts", 3,
       "hosts[1] 'gpu-*' matches no worker host (workers: vol-0"},
      {"  churn:\n    - {hosts: [relay], mtbf: 1 h, mttr: 1 h}\n", "world.churn[0].hosts", 3, "hosts[0] 'relay' matches no worker host"},
      {"  churn:\n    - {hosts: [], mtbf: 1 h, mttr: 1 h}\n", "world.churn[0].hosts", 3, "must list at least one host"},
      {"  churn:\n    - {mtbf: 1 h, mttr: 1 h}\n", "world.churn[0].hosts", 3, "is required"},
      {"  churn:\n    - {hosts: [dc], mtbf: 0 s, mttr: 1 h}\n", "world.churn[0].mtbf", 3, "must be in [1, 1000000000] s"},
      {"  churn:\n    - {hosts: [dc], mtbf: 1 h, mttr: 1e10 s}\n", "world.churn[0].mttr", 3, "must be in [1, 1000000000] s"},
      {"  churn:\n    - {hosts: [dc], mtbf: 1 h, mttr: 1 h, start: -1 s}\n", "world.churn[0].start", 3,
       "must be in [0, 1000000000] s"},
      {"  churn:\n    - {hosts: [dc], mtbf: 1 h, mttr: 1 h, seed: -3}\n", "world.churn[0].seed", 3, "must be an integer in [0, 18446744073709551615]"},
      {"  churn:\n    - {hosts: [dc], mtbf: 1 h, mttr: 1 h, mtbr: 1 h}\n", "world.churn[0].mtbr", 3, "unknown key"},
  });
}

TEST_CASE("world: trace files that are missing, odd or malformed name the file, its line and the key") {
  Scratch scratch("bad-trace");
  const std::string file = scratch.scenario();
  const std::string dir = scratch.dir.string();
  scratch.write("letters.csv", "time,value\n0,1\n10,fast\n");
  scratch.write("three.csv", "0,1,2\n");
  scratch.write("header-late.csv", "0,1\ntime,value\n");
  scratch.write("backwards.csv", "# comment\n0,1\n5,0.5\n5,0.7\n");
  scratch.write("period.csv", "0,1\n86400,0.5\n");
  scratch.write("zero.csv", "0,0\n");
  scratch.write("state.csv", "0,0.5\n");
  scratch.write("empty.csv", "time_s,value\n# nothing\n");
  scratch.write("late.csv", "2e9,1\n");
  scratch.write("nan.csv", "0,nan\n");
  fs::create_directories(scratch.dir / "folder.csv");
  const std::string tr = "  traces:\n    - {link: vol-1.up, bandwidth: ";  // line 3
  check_cases(
      {
          {tr + "nope.csv}\n", "world.traces[0].bandwidth", 3, "trace file '" + dir + "/nope.csv' does not exist"},
          {tr + "folder.csv}\n", "world.traces[0].bandwidth", 3, "trace file '" + dir + "/folder.csv' is a directory"},
          {tr + "letters.csv}\n", "world.traces[0].bandwidth", 3,
           "trace '" + dir + "/letters.csv' line 3: expected a row 'time_s,value' of two numbers, got '10,fast'"},
          {tr + "three.csv}\n", "world.traces[0].bandwidth", 3, "three.csv' line 1: expected a row 'time_s,value'"},
          {tr + "header-late.csv}\n", "world.traces[0].bandwidth", 3, "header-late.csv' line 2: expected a row"},
          {tr + "backwards.csv}\n", "world.traces[0].bandwidth", 3,
           "backwards.csv' line 4: time 5 s is not after the previous row's 5 s (line 3): times must strictly increase"},
          {tr + "period.csv, period: 24 h}\n", "world.traces[0].period", 3,
           "period.csv' line 2: time 86400 s is not before the period (86400 s)"},
          {tr + "zero.csv}\n", "world.traces[0].bandwidth", 3,
           "zero.csv' line 1: the bandwidth must be a fraction of nominal in [0.001, 100], got 0"},
          {"  traces:\n    - {host: vol-1, state: state.csv}\n", "world.traces[0].state", 3,
           "state.csv' line 1: the state must be 1 (on) or 0 (off), got 0.5"},
          {tr + "empty.csv}\n", "world.traces[0].bandwidth", 3, "empty.csv' has no rows"},
          {tr + "late.csv}\n", "world.traces[0].bandwidth", 3, "late.csv' line 1: time must be in [0, 1000000000] s"},
          {tr + "nan.csv}\n", "world.traces[0].bandwidth", 3, "nan.csv' line 1: expected a row"},
          {tr + "zero.csv, period: 0 s}\n", "world.traces[0].period", 3, "must be in (0, 1000000000] s"},
      },
      file);
  CHECK(contains(world_error("world:\n" + tr + "/dev/zero}\n", file).what(), "is a device, not a regular file"));
}

TEST_CASE("world: values nearer 0 than SimGrid can take are refused at load (regression: a subnormal failed the run in stod)") {
  // 1e-310 is a subnormal double: SimGrid's profile parser threw std::out_of_range ("stod") on it mid-run,
  // and a bandwidth of 1e-310 of nominal left transfers that never end (a SimGrid deadlock).
  const std::string ev = "  events:\n    - {";  // the entry is on line 3
  check_cases({
      {ev + "host: vol-3, at: 1 s, speed: 1e-310}\n", "world.events[0].speed", 3, "must be in [0.001, 100], got 1e-310"},
      {ev + "link: vol-1.up, at: 1 s, bandwidth: 1e-310}\n", "world.events[0].bandwidth", 3, "must be in [0.001, 100]"},
      {ev + "link: vol-1.up, at: 1 s, latency: 1e-310 s}\n", "world.events[0].latency", 3,
       "got '1e-310 s', which is out of range (too close to 0 for a double)"},
      {ev + "link: vol-1.up, at: 1 s, latency: 1e-300 s}\n", "world.events[0].latency", 3,
       "must be 0 or at least 1 ns (the simulator's time resolution), got 1e-300 s"},
      {ev + "host: vol-3, at: 1e-310 s, speed: 0.5}\n", "world.events[0].at", 3, "out of range (too close to 0"},
      {ev + "host: vol-3, at: 1e-400 s, speed: 0.5}\n", "world.events[0].at", 3, "out of range (too close to 0"},
      {ev + "host: vol-3, at: 1e-12 s, speed: 0.5}\n", "world.events[0].at", 3, "must be 0 or at least 1 ns"},
      {ev + "host: vol-3, at: 0 s, until: 1e-305 ns, speed: 0.5}\n", "world.events[0].until", 3,
       "out of range (too close to 0"},  // a normal number times the unit's factor: subnormal
      {"  failure_timeout: 1e-310 s\n", "world.failure_timeout", 2, "out of range (too close to 0"},
      {"  failure_timeout: 1 us\n", "world.failure_timeout", 2, "must be in [0.001, 3600] s"},
      {"  churn:\n    - {hosts: [dc], mtbf: 1e-310 s, mttr: 1 h}\n", "world.churn[0].mtbf", 3, "out of range"},
      {"  churn:\n    - {hosts: [dc], mtbf: 1 ns, mttr: 1 h}\n", "world.churn[0].mtbf", 3, "must be in [1, 1000000000] s"},
      {"  churn:\n    - {hosts: [dc], mtbf: 1 h, mttr: 1 h, start: 1e-300 s}\n", "world.churn[0].start", 3,
       "must be 0 or at least 1 ns"},
  });
  std::string why;
  CHECK_FALSE(parse_quantity("1e-310 s", Quantity::duration_s, &why));
  CHECK(contains(why, "too close to 0"));
  CHECK_FALSE(parse_quantity("1e-320 Gbps", Quantity::bandwidth_bps, &why));
  CHECK(*parse_quantity("0 s", Quantity::duration_s) == 0);
  CHECK(*parse_quantity("1e-300 s", Quantity::duration_s) == 1e-300);  // normal: for the key's own range to judge

  // The edges are accepted.
  WorldSpec w = world_of("world:\n  failure_timeout: 1 ms\n  events:\n"
                         "    - {host: vol-3, at: 1 ns, speed: 0.001}\n"
                         "    - {link: vol-1.up, at: 0 s, latency: 1 ns}\n"
                         "    - {link: vol-2.up, at: 1e9 s, bandwidth: 100}\n"
                         "  churn:\n    - {hosts: [dc], mtbf: 1 s, mttr: 1 s}\n");
  REQUIRE(w.profiles.size() == 3);
  CHECK(w.failure_timeout_s == 1e-3);
  CHECK(w.profiles[0].points == Points{{1e-9, 0.001}});
  CHECK(w.profiles[1].points == Points{{0, 1e-9}});
  CHECK(w.profiles[2].points == Points{{1e9, 100}});
}

TEST_CASE("world: fractions of nominal below 1/1000 are refused (regression: 1e-9 gave 300-digit wall-clocks)") {
  check_cases({
      {"  events:\n    - {host: vol-3, at: 1 s, speed: 1e-9}\n", "world.events[0].speed", 3,
       "must be in [0.001, 100], got 1e-9"},
      {"  events:\n    - {link: vol-1.up, at: 1 s, bandwidth: 1e-300}\n", "world.events[0].bandwidth", 3,
       "must be in [0.001, 100], got 1e-300"},
      {"  events:\n    - {link: vol-1.up, at: 1 s, bandwidth: 0.000999}\n", "world.events[0].bandwidth", 3,
       "must be in [0.001, 100]"},
  });
}

TEST_CASE("world: a trace field is one whole decimal number (regression: a NUL byte read as 0)") {
  Scratch scratch("fields");
  const std::string file = scratch.scenario();
  scratch.write("nul-value.csv", std::string("0,1\n10,\0\n", 9));
  scratch.write("nul-tail.csv", std::string("0,1\0 0.5\n", 9));
  scratch.write("nul-time.csv", std::string("\0,1\n", 4));
  scratch.write("hex.csv", "0x10,1\n");
  scratch.write("inf.csv", "0,inf\n");
  scratch.write("space.csv", "0,1 2\n");
  scratch.write("tiny-time.csv", "1e-310,1\n");
  scratch.write("under-time.csv", "1e-400,1\n");
  scratch.write("near-time.csv", "1e-12,1\n");
  scratch.write("tiny-value.csv", "0,1e-310\n");
  scratch.write("low-value.csv", "0,1e-9\n");
  scratch.write("tiny-latency.csv", "0,1e-20\n");
  const std::string tr = "  traces:\n    - {link: vol-1.up, bandwidth: ";  // line 3
  const std::string lat = "  traces:\n    - {link: vol-1.up, latency: ";
  check_cases(
      {
          // A state trace: read as 0, the NUL byte turned the host off.
          {"  traces:\n    - {host: vol-1, state: nul-value.csv}\n", "world.traces[0].state", 3,
           "nul-value.csv' line 2: expected a row 'time_s,value' of two numbers, got '10,\\x00': '\\x00' is not a "
           "decimal number"},
          {tr + "nul-tail.csv}\n", "world.traces[0].bandwidth", 3, "got '0,1\\x00 0.5': '1\\x00 0.5' is not a decimal number"},
          {tr + "nul-time.csv}\n", "world.traces[0].bandwidth", 3, "'\\x00' is not a decimal number"},
          {tr + "hex.csv}\n", "world.traces[0].bandwidth", 3, "'0x10' is not a decimal number"},
          {tr + "inf.csv}\n", "world.traces[0].bandwidth", 3, "'inf' is not a decimal number"},
          {tr + "space.csv}\n", "world.traces[0].bandwidth", 3, "'1 2' is not a decimal number"},
          {tr + "tiny-time.csv}\n", "world.traces[0].bandwidth", 3, "'1e-310' is out of range for a double"},
          {tr + "under-time.csv}\n", "world.traces[0].bandwidth", 3, "'1e-400' is out of range for a double"},
          {tr + "near-time.csv}\n", "world.traces[0].bandwidth", 3,
           "near-time.csv' line 1: time must be 0 or at least 1 ns (the simulator's time resolution), got 1e-12 s"},
          {tr + "tiny-value.csv}\n", "world.traces[0].bandwidth", 3, "'1e-310' is out of range for a double"},
          {tr + "low-value.csv}\n", "world.traces[0].bandwidth", 3,
           "low-value.csv' line 1: the bandwidth must be a fraction of nominal in [0.001, 100], got 1e-9"},
          {lat + "tiny-latency.csv}\n", "world.traces[0].latency", 3,
           "tiny-latency.csv' line 1: the latency must be seconds, 0 or in [1e-9, 3600], got 1e-20"},
      },
      file);
}

TEST_CASE("world: a repeating trace's period is at least 100 ms per row (regression: a 1 ns period hung the run)") {
  Scratch scratch("period-rate");
  const std::string file = scratch.scenario();
  const std::string dir = scratch.dir.string();
  scratch.write("one.csv", "0,0.5\n");
  scratch.write("three.csv", "0,0.5\n0.1,1\n0.2,0.7\n");
  const std::string tr = "  traces:\n    - {link: vol-1.up, bandwidth: ";  // line 3
  check_cases(
      {
          {tr + "one.csv, period: 1 ns}\n", "world.traces[0].period", 3,
           "must be at least 100 ms per row of the trace ('" + dir + "/one.csv' has 1: at least 0.1 s), got 1e-09 s: a "
           "repeating trace replays for the whole run"},
          {tr + "one.csv, period: 1 us}\n", "world.traces[0].period", 3, "must be at least 100 ms per row"},
          {tr + "three.csv, period: 250 ms}\n", "world.traces[0].period", 3, "has 3: at least 0.3 s), got 0.25 s"},
      },
      file);
  WorldSpec w = world_of("world:\n" + tr + "three.csv, period: 300 ms}\n", file);
  REQUIRE(w.profiles.size() == 1);
  CHECK(w.profiles[0].period_s == doctest::Approx(0.3));
}
