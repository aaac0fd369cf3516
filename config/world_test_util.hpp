// Helpers shared by the world section's tests (world_test.cpp: what a valid section makes;
// world_errors_test.cpp: what an invalid one is refused with): a platform with every kind of endpoint,
// a scratch folder for trace files, and parse_world on YAML text.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "config/platform_test_util.hpp"
#include "config/section.hpp"
#include "config/world.hpp"

namespace world_test {

using namespace locosim;
namespace fs = std::filesystem;

// Workers vol-0..vol-7 (own links), volunteer, dc (site eu), lab (site us); a relay; wan eu<->us.
inline const char* kPlatform =
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

inline const PlatformSpec& platform() {
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
inline WorldSpec world_of(const std::string& yaml, const std::string& file = "s.yaml", uint64_t seed = 1) {
  Section top = Section::load_string(yaml, file);
  Section world = top.child("world", /*optional=*/true);
  return parse_world(world, platform(), seed);
}

inline ConfigError world_error(const std::string& yaml, const std::string& file = "s.yaml") {
  return platform_test::error_of([&] { world_of(yaml, file); });
}

using Points = std::vector<std::pair<double, double>>;

}  // namespace world_test
