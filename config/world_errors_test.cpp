// Tests of parse_world on invalid sections: the file:line, dotted key and constraint of each error,
// and the regressions where a value once passed the checks and broke a run.
#include "config/world.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/world_test_util.hpp"
#include <doctest/doctest.h>

using namespace locosim;
using namespace world_test;
using platform_test::contains;
using platform_test::error_of;

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
