// libFuzzer target over the `world:` section and its trace files (config/world.cpp): each input is read
// as a scenario's `world:` mapping on a small fixed platform, and as a trace file's contents under each
// kind of resource. Links config/ only (no LibTorch, no SimGrid), so it builds in a minute and runs fast.
//
// An input is YAML, optionally followed by a line "#trace" and a trace file's contents: the YAML part
// (or, without that line, the whole input) is the scenario, the part after it (else the whole input) is
// written to traces/input.csv, which the scenario's world section may name, and which is also read as
// one kind of resource's trace, chosen by the input's length (so mutations reach every kind).
// Bad input must end in ConfigError; anything else escapes and is a finding. What parse_world accepts
// must also be what the simulator can hand SimGrid: every profile value survives SimGrid's text round
// trip (std::stod of "%.17g"), and the bounds the loader promises (config/world.hpp) hold.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "config/error.hpp"
#include "config/platform.hpp"
#include "config/section.hpp"
#include "config/world.hpp"

#ifndef LOCOSIM_SOURCE_DIR
#error "LOCOSIM_SOURCE_DIR must name the repository root (fuzz/CMakeLists.txt sets it)"
#endif

namespace fs = std::filesystem;
using namespace locosim;

namespace {

// Workers vol-0..vol-3 on home links, dc in site eu, lab in site us, a relay, and the WAN between the
// sites: every kind of link a world entry can name. The seeds in world-seeds/ are written for it.
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
    "  - {name: vol, accelerator: gpu, count: 4, uplink: {bandwidth: 1 kbps, latency: 10 ms},\n"
    "     downlink: {bandwidth: 200 Mbps, latency: 12 ms}}\n"
    "  - {name: dc, site: eu, accelerator: gpu}\n"
    "  - {name: lab, site: us, accelerator: gpu}\n"
    "relay: {uplink: {bandwidth: 10 Gbps, latency: 1 ms}, downlink: {bandwidth: 10 Gbps, latency: 2 ms}}\n";

// The input's trace contents under each kind of resource, repeating and not: one of these per input
// (each parse costs about as much as libFuzzer's whole round, most of it in ASan's allocator).
const char* const kTraceWorlds[] = {
    "world: {traces: [{host: vol-0, speed: traces/input.csv}]}\n",
    "world: {traces: [{host: vol-1, state: traces/input.csv, period: 24 h}]}\n",
    "world: {traces: [{link: vol-2.up, bandwidth: traces/input.csv, period: 24 h}]}\n",
    "world: {traces: [{link: wan.eu->us, latency: traces/input.csv}]}\n",
    "world: {traces: [{link: eu.lan.dc.down, state: traces/input.csv}]}\n",
};

constexpr const char* kTraceMarker = "\n#trace\n";

// Under here (made in LLVMFuzzerInitialize, removed at exit): scenarios/s.yaml is the scenario's name
// (never written: the text is parsed from memory), scenarios/traces/ holds copies of the repository's
// traces and input.csv, the trace part of the input being tried.
fs::path g_root;
fs::path g_scenario;
fs::path g_trace;
const PlatformSpec* g_platform = nullptr;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "world_fuzz: %s\n", what.c_str());
  std::abort();
}

// Writes a new file: ext4 flushes a file truncated and rewritten at close.
void write_file(const fs::path& path, const std::string& content) {
  std::error_code ignored;
  fs::remove(path, ignored);
  std::ofstream out(path, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) finding("cannot write " + path.string());
}

void remove_root() {
  std::error_code ec;
  if (!g_root.empty()) fs::remove_all(g_root, ec);
}

// SimGrid's profile parser reads each "%.17g %.17g" line with std::stod (sim/world.cpp writes them).
void check_round_trip(double v, const std::string& where) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  try {
    if (std::stod(text) != v) finding(where + ": " + text + " does not read back as itself");
  } catch (const std::exception& e) {
    finding(where + ": " + text + " fails std::stod (" + e.what() + ")");
  }
}

// The bounds config/world.hpp promises of what parse_world returns.
void check_world(const WorldSpec& w) {
  if (!(w.failure_timeout_s >= 1e-3 && w.failure_timeout_s <= 3600)) finding("failure_timeout out of its range");
  for (const WorldProfile& p : w.profiles) {
    const std::string where = "profile of " + p.target + " from " + p.source;
    if (p.points.empty()) finding(where + ": no points");
    double previous = -1;
    for (const auto& [t, v] : p.points) {
      if (!(t >= 0 && t <= 1e9) || (t != 0 && t < 1e-9) || !(t > previous)) finding(where + ": a bad time");
      previous = t;
      switch (p.what) {
        case WorldResource::host_speed:
        case WorldResource::link_bandwidth:
          if (!(v >= 1e-3 && v <= 100)) finding(where + ": a fraction out of [0.001, 100]");
          break;
        case WorldResource::link_latency:
          if (!(v >= 0 && v <= 3600) || (v != 0 && v < 1e-9)) finding(where + ": a latency neither 0 nor in [1 ns, 1 h]");
          break;
        case WorldResource::host_state:
        case WorldResource::link_state:
          if (v != 0 && v != 1) finding(where + ": a state neither 0 nor 1");
          break;
      }
      check_round_trip(t, where);
      check_round_trip(v, where);
    }
    if (p.period_s >= 0) {
      if (!(p.period_s > p.points.back().first)) finding(where + ": a point at or past the period");
      if (p.period_s < 0.1 * static_cast<double>(p.points.size()) * (1 - 1e-12)) finding(where + ": period too short");
      check_round_trip(p.period_s, where);
    }
  }
  for (const ChurnSpec& c : w.churn) {
    if (c.hosts.empty() || !(c.mtbf_s >= 1 && c.mttr_s >= 1) || !(c.start_s >= 0 && c.start_s <= 1e9)) {
      finding("churn group from " + c.source + " out of its bounds");
    }
  }
}

void parse(const std::string& yaml) {
  if (yaml.find("world") == std::string::npos) return;  // an empty world: nothing to read
  try {
    Section top = Section::load_string(yaml, g_scenario.string());
    Section world = top.child("world", /*optional=*/true);
    check_world(parse_world(world, *g_platform, 1));
  } catch (const ConfigError&) {
  }
}

}  // namespace

// Allocation stacks 4 frames deep and a 16 MB quarantine (not 30 and 256 MB): recording stacks and
// touching fresh pages were half of each execution, yaml-cpp allocating a node at a time.
extern "C" const char* __asan_default_options() { return "malloc_context_size=4:quarantine_size_mb=16"; }
extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1"; }

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/locosim-world-fuzz.XXXXXX";
  if (!mkdtemp(pattern.data())) finding("mkdtemp failed");
  g_root = pattern;
  std::atexit(remove_root);
  fs::create_directories(g_root / "scenarios" / "traces");
  for (const auto& entry : fs::directory_iterator(fs::path(LOCOSIM_SOURCE_DIR) / "scenarios" / "traces")) {
    if (entry.path().extension() == ".csv") fs::copy_file(entry.path(), g_root / "scenarios" / "traces" / entry.path().filename());
  }
  g_scenario = g_root / "scenarios" / "s.yaml";
  g_trace = g_root / "scenarios" / "traces" / "input.csv";
  Section platform = Section::load_string(kPlatform, "platform.yaml");
  static const PlatformSpec spec = parse_platform(platform);
  g_platform = &spec;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t marker = input.find(kTraceMarker);
  const std::string yaml = marker == std::string::npos ? input : input.substr(0, marker + 1);
  const std::string trace = marker == std::string::npos ? input : input.substr(marker + std::string(kTraceMarker).size());

  write_file(g_trace, trace);
  parse(yaml);
  parse(kTraceWorlds[size % (sizeof kTraceWorlds / sizeof kTraceWorlds[0])]);
  return 0;
}
