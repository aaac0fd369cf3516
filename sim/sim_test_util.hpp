// For simulator tests: a platform from YAML text, and an Engine with that platform built.
// SimGrid allows one Engine per process: make at most one TestSim per TEST_CASE (ctest runs each case
// in a process of its own).
#pragma once
#include <simgrid/s4u.hpp>

#include <string>

#include "config/section.hpp"
#include "sim/platform.hpp"

namespace locosim {

inline PlatformSpec platform_from_yaml(const std::string& yaml, const std::string& file = "test.yaml") {
  Section s = Section::load_string(yaml, file);
  return parse_platform(s);
}

struct TestSim {
  int argc = 1;
  char name[5] = "test";
  char* argv[2] = {name, nullptr};
  simgrid::s4u::Engine engine{&argc, argv};
  BuiltPlatform platform;
  explicit TestSim(const PlatformSpec& spec, const WorldSpec& world = {}) {
    configure_network_model(engine);
    platform = build_platform(spec, world);
  }
};

}  // namespace locosim
