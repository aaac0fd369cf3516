// The `network: {model, calibration}` keys and calibration files.
#include "config/network_model.hpp"

#include <cstdio>
#include <fstream>
#include <string>

#include "config/error.hpp"
#include "config/section.hpp"
#include <doctest/doctest.h>

using locosim::ConfigError;
using locosim::NetworkModelKind;
using locosim::Section;

namespace {

locosim::NetworkModelSpec parse_network(const std::string& yaml, const std::string& file = "scenario.yaml") {
  Section s = Section::load_string(yaml, file);
  Section network = s.child("network");
  return locosim::parse_network_model(network);
}

}  // namespace

TEST_CASE("network model: ideal by default, and tcp takes the built-in calibration or a file") {
  CHECK(parse_network("network: {}\n").kind == NetworkModelKind::ideal);
  auto tcp = parse_network("network: {model: tcp}\n");
  CHECK(tcp.kind == NetworkModelKind::tcp);
  CHECK(tcp.tcp.source == "built-in");

  const std::string path = "/tmp/locosim-calibration-test.yaml";
  {
    std::ofstream f(path);
    f << "tcp: {bandwidth_factor: 0.9, crosstraffic: true, window: 1 MiB}\n";
  }
  auto named = parse_network("network: {model: tcp, calibration: " + path + "}\n");
  CHECK(named.tcp.bandwidth_factor == 0.9);
  CHECK(named.tcp.crosstraffic);
  CHECK(named.tcp.window_bytes == 1048576.0);
  CHECK(named.tcp.latency_factor == 1.0);
  CHECK(named.tcp.source == path);
  std::remove(path.c_str());
}

TEST_CASE("network model: the built-in tcp values are the shipped calibration file's") {
  Section file = Section::load_file("platforms/calibration/tcp-emulated.yaml");
  locosim::TcpCalibration shipped = locosim::parse_tcp_calibration(file);
  locosim::TcpCalibration builtin;
  CHECK(shipped.bandwidth_factor == builtin.bandwidth_factor);
  CHECK(shipped.latency_factor == builtin.latency_factor);
  CHECK(shipped.crosstraffic == builtin.crosstraffic);
  CHECK(shipped.window_bytes == builtin.window_bytes);
}

TEST_CASE("network model: bad input names the key and the constraint") {
  CHECK_THROWS_WITH_AS(parse_network("network: {model: ns3}\n"), doctest::Contains("network.model"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_network("network: {calibration: x.yaml}\n"),
                       doctest::Contains("network.calibration: a calibration file is for `model: tcp`"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_network("network: {model: tcp, calibration: /nonexistent/c.yaml}\n"),
                       doctest::Contains("does not exist"), ConfigError);
  const std::string path = "/tmp/locosim-calibration-bad.yaml";
  {
    std::ofstream f(path);
    f << "tcp: {bandwidth_factor: 1.5}\n";
  }
  CHECK_THROWS_WITH_AS(parse_network("network: {model: tcp, calibration: " + path + "}\n"),
                       doctest::Contains("tcp.bandwidth_factor"), ConfigError);
  std::remove(path.c_str());
}
