// The relay of a real cluster (`network: {all_gather: relay}`, the DisTrO report's relay server): a
// process every rank connects to over TCP. It stores each rank's all-gather payload and, as soon as
// the whole of it has arrived, forwards it to every other rank, on a thread per receiver (a slow
// downlink holds up only its own rank). Each rank thus uploads its payload once and downloads the
// K-1 others: what the simulator's relay all-gather moves (sim/collectives.hpp).
//
// Wire: a rank opens with [int64 rank]; then each all-gather is a frame [int64 n][n bytes] from the
// rank, forwarded to the others as [int64 source rank][int64 n][n bytes]. Frames keep their order
// per source, so the k-th frame from each source is the k-th all-gather.
//
// Static groups only: a rank lost (its connection closed, or silent past the timeout) fails the
// others' all-gathers, and with them the run.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace locosim {

// Serves `world_size` ranks on `port` (all addresses; 0: a free port) until every rank has closed its
// connection. `on_listening` gets the port once it is bound (a launcher starts its ranks then).
// Throws std::runtime_error if the port cannot be bound or a rank does not connect within `timeout`.
void serve_relay(uint16_t port, int world_size, std::chrono::milliseconds timeout,
                 const std::function<void(uint16_t port)>& on_listening = nullptr);

// A relay on a thread of this process (the --spawn launcher's), listening on a free port once
// constructed (throws std::runtime_error if it cannot). The thread blocks the stop signals, which the
// launcher's own thread must see, and allocates nothing until every rank has connected, so after the
// launcher's forks.
class RelayThread {
 public:
  RelayThread(int world_size, std::chrono::milliseconds timeout);
  ~RelayThread();  // as finish(false) if not called
  uint16_t port() const { return port_; }
  // ranks_done: every rank ran to its end (and disconnected): waits for the relay to end. Otherwise
  // leaves it to the process's exit (ranks that never connected would hold it for the timeout).
  void finish(bool ranks_done);

 private:
  struct State;
  std::shared_ptr<State> state_;
  uint16_t port_ = 0;
};

// Throws std::invalid_argument unless `address` is host:port with a port from 1 to 65535.
void check_relay_address(const std::string& address);

// A rank's connection to the relay.
class RelayClient {
 public:
  // `address` is host:port (an IPv4 address or a name). Throws std::runtime_error if it cannot
  // connect within `timeout`.
  RelayClient(const std::string& address, int rank, int world_size, std::chrono::milliseconds timeout);
  ~RelayClient();
  RelayClient(const RelayClient&) = delete;
  RelayClient& operator=(const RelayClient&) = delete;

  // Sends `payload` while receiving the other ranks' payloads of the same all-gather: out[r] for
  // every r != rank (out[rank] is left empty). Throws std::runtime_error when the relay or a rank is
  // gone, or nothing moves for the timeout.
  std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& payload);

 private:
  int fd_ = -1;
  int rank_ = 0;
  int world_size_ = 1;
  std::chrono::milliseconds timeout_;
  std::vector<uint8_t> inbox_;                          // bytes read, not yet a whole frame
  std::vector<std::deque<std::vector<uint8_t>>> ahead_;  // by source: frames of later all-gathers
};

}  // namespace locosim
