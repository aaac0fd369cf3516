// The job's key-value store on a real cluster, hosted by rank 0: what c10d's TCPStore was to the
// ranks (Gloo's rendezvous, the membership protocol, heartbeats, the parameter server, metric rows),
// but only for processes that hold the job's secret, and bounded. No LibTorch here.
//
// A thread accepts; each connection gets a thread of its own that first runs the handshake
// (real/auth.hpp) within a deadline, then serves requests (real/store_protocol.hpp) one at a time. An
// idle or slow stranger holds only its own thread, for the handshake's deadline; connections past
// `max_connections` are closed at once. A peer that breaks the protocol or the limits is dropped, and
// the message naming it goes to stderr.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "real/auth.hpp"
#include "real/store_protocol.hpp"

namespace locosim {

struct StoreServerOptions {
  std::string address = "127.0.0.1";  // where to listen: the job's MASTER_ADDR
  uint16_t port = 0;                   // 0: a free port
  int world_size = 1;
  StoreLimits limits;
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds frame_timeout{60000};  // a frame begun must be whole within this
  int max_connections = 0;                         // 0: 32 + 8 per rank
};

class StoreServer {
 public:
  // Listens now (throws std::runtime_error if it cannot) and serves on threads of its own.
  StoreServer(const StoreServerOptions& options, const JobSecret& secret);
  ~StoreServer();  // stops serving and closes every connection
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  uint16_t port() const;
  // Connections refused or dropped so far (failed handshakes, broken protocol): for tests.
  int64_t peers_dropped() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace locosim
