// Helpers shared by the config tests: parse platform YAML text, catch the expected ConfigError.
#pragma once
#include <string>

#include "config/error.hpp"
#include "config/platform.hpp"
#include "config/section.hpp"
#include <doctest/doctest.h>

namespace platform_test {

inline locosim::PlatformSpec parse(const std::string& yaml) {
  locosim::Section s = locosim::Section::load_string(yaml, "p.yaml");
  return locosim::parse_platform(s);
}

// Runs `read`, expecting a ConfigError; returns it for the caller to check (fails the test if none).
template <class F>
locosim::ConfigError error_of(F&& read) {
  try {
    read();
  } catch (const locosim::ConfigError& e) {
    return e;
  }
  FAIL("expected a ConfigError");
  return locosim::ConfigError("", 0, 0, "", "");
}

// Parses `yaml`, expecting a ConfigError.
inline locosim::ConfigError parse_error(const std::string& yaml) {
  return error_of([&] { parse(yaml); });
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline const char* kAccelerators =
    "accelerators:\n"                                      // line 1
    "  rtx4090: {peak: 165 TFLOPS, efficiency: 0.35}\n"    // line 2
    "  h100: {peak: 989 TFLOPS, efficiency: 0.4}\n";       // line 3

inline const char* kTwoSites =
    "sites:\n"                                                                            // line 4
    "  eu: {lan: {bandwidth: 100 Gbps, latency: 5 us},\n"                                 // line 5
    "       uplink: {bandwidth: 1 Gbps, latency: 5 ms}, downlink: {bandwidth: 2 Gbps, latency: 5 ms}}\n"
    "  us: {lan: {bandwidth: 100 Gbps, latency: 0 s}}\n";                                 // line 7

}  // namespace platform_test
