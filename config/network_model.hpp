// The network model a scenario's flows are timed with (scenario key `network: {model: ...}`):
//   ideal: a lone transfer takes bytes/bandwidth + latency; concurrent flows share links max-min.
//   tcp:   the same flows as TCP over Ethernet moves them, with factors measured on real transfers
//          (scripts/calibrate.py writes them to a calibration file a scenario names).
// sim/platform.cpp turns it into SimGrid's settings; docs/validation.md has the measurements.
#pragma once
#include <string>

#include "config/section.hpp"

namespace locosim {

enum class NetworkModelKind { ideal, tcp };

// The TCP model's parameters, as SimGrid's CM02 flow model takes them. The defaults are
// platforms/calibration/tcp-emulated.yaml's, fitted by scripts/calibrate.py (a test keeps them equal).
struct TcpCalibration {
  // A flow gets this share of a link's bandwidth. A lone TCP stream gets 0.956 (1448 B of payload per
  // 1514 B Ethernet frame), a two-way exchange 0.917 (acknowledgements share each uplink); fitted on
  // the real backend's measured steps over CUBIC hosts' links, 0.926.
  double bandwidth_factor = 0.9261;
  // Multiplies every route latency (1: the platform's latencies are the round trip's halves as measured).
  double latency_factor = 1.0;
  // Acknowledgements: every flow also loads the links of its reverse route with 5% of its rate
  // (SimGrid's cross-traffic; Linux acknowledges every second 1514 B segment with 66 B: 2.2%). The
  // fit chooses whether it predicts better on (true) or folded into bandwidth_factor (false): on
  // symmetric rings the two fit equally well; its relay case, where a slow uplink's host downloads
  // fast, chooses off (5% over-charges that uplink; docs/validation.md).
  bool crosstraffic = false;
  // The TCP window bound: a flow moves at most bandwidth_factor · window / (2 · route latency)
  // (SimGrid's TCP-gamma). The calibration reads Linux's largest receive window: tcp_rmem's maximum
  // (32 MiB) less the share tcp_adv_win_scale = 1 keeps for overhead.
  double window_bytes = 16.0 * 1024 * 1024;
  std::string source = "built-in";  // the calibration file it came from
};

struct NetworkModelSpec {
  NetworkModelKind kind = NetworkModelKind::ideal;
  TcpCalibration tcp;  // used when kind == tcp
};

// Reads `model: ideal | tcp` and `calibration: <file>` from a scenario's `network:` section (the
// collectives' keys are left to parse_network). Without a calibration file, tcp uses the built-in
// values above, which are platforms/calibration/tcp-emulated.yaml's (a test keeps them equal).
// Throws ConfigError: unknown model, calibration without tcp, a missing or malformed calibration file.
NetworkModelSpec parse_network_model(Section& network);

// Reads a calibration file (`tcp: {bandwidth_factor, latency_factor, crosstraffic, window}`; the
// defaults of the optional keys are those of TcpCalibration).
TcpCalibration parse_tcp_calibration(Section& file);

}  // namespace locosim
