#include "config/network_model.hpp"

namespace locosim {

TcpCalibration parse_tcp_calibration(Section& file) {
  Section tcp = file.child("tcp");
  TcpCalibration c;
  c.bandwidth_factor = tcp.number("bandwidth_factor", std::nullopt, Range::open_closed(0, 1));
  c.latency_factor = tcp.number("latency_factor", c.latency_factor, Range::positive());
  c.crosstraffic = tcp.flag("crosstraffic", c.crosstraffic);
  c.window_bytes = tcp.quantity("window", Quantity::bytes, std::to_string(c.window_bytes) + " B");
  c.source = file.file();
  tcp.finish();
  file.finish();
  return c;
}

NetworkModelSpec parse_network_model(Section& network) {
  NetworkModelSpec spec;
  spec.kind = network.choice("model", {"ideal", "tcp"}, "ideal") == "tcp" ? NetworkModelKind::tcp
                                                                          : NetworkModelKind::ideal;
  if (!network.has("calibration")) return spec;
  if (spec.kind != NetworkModelKind::tcp) {
    network.fail("calibration", "a calibration file is for `model: tcp` (the ideal model has no factors)");
  }
  const std::string path = network.file_path("calibration");
  const std::string problem = regular_file_problem(path, kMaxYamlFileBytes);
  if (!problem.empty()) {
    network.fail("calibration", "file '" + path + "' " + problem +
                                    "; a calibration file is YAML written by scripts/calibrate.py");
  }
  Section file = Section::load_file(path);
  spec.tcp = parse_tcp_calibration(file);
  network.adopt_resolved("calibration_resolved", file);
  return spec;
}

}  // namespace locosim
