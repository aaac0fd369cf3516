// The relay of a real cluster (`network: {all_gather: relay}`, the DisTrO report's relay server): a
// process every rank connects to over TCP. It stores each rank's all-gather payload and, as soon as
// the whole of it has arrived, forwards it to every other rank, on a thread per receiver (a slow
// downlink holds up only its own rank). Each rank thus uploads its payload once and downloads the
// K-1 others: what the simulator's relay all-gather moves (sim/collectives.hpp).
//
// Wire: a connection opens with the job's handshake (real/auth.hpp, service "relay"), which proves
// the peer holds the job's secret and which rank it is; nothing else is read from it before. Then each
// all-gather is a frame [int64 n][n bytes] from the rank, forwarded to the others as
// [int64 source rank][int64 n][n bytes] (real/relay_frames.hpp). Frames keep their order per source,
// so the k-th frame from each source is the k-th all-gather.
//
// Nothing from the wire is trusted past what the run can need: a frame over `max_frame_bytes` (the
// largest payload the run's policy sends), a rank claimed twice, a source out of range, a peer silent
// in the middle of a frame for the timeout: each fails that peer with a PeerError naming it.
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

#include "real/auth.hpp"
#include "real/relay_frames.hpp"

namespace locosim {

// Serves `world_size` ranks on `address`:`port` (0: a free port) until every rank has closed its
// connection. `on_listening` gets the port once it is bound (a launcher starts its ranks then).
// Connections are authenticated off the accept loop, each within `timeout`: a stranger, or an idle or
// slow client, holds up neither the accept loop nor the ranks; the first connection to prove a rank
// keeps it, a second one claiming it is refused. Refused connections are reported on stderr.
// Throws std::runtime_error if the address cannot be bound or no rank proves itself for `timeout`
// while some are missing, and PeerError (naming the rank and its address) when a rank breaks the
// protocol: the relay then closes every connection, and the ranks' all-gathers fail.
void serve_relay(const std::string& address, uint16_t port, int world_size, const JobSecret& secret,
                 uint64_t max_frame_bytes, std::chrono::milliseconds timeout,
                 const std::function<void(uint16_t port)>& on_listening = nullptr);

// A relay on a thread of this process (the --spawn launcher's), listening on a free port of
// 127.0.0.1 once constructed (throws std::runtime_error if it cannot). The thread blocks the stop
// signals, which the launcher's own thread must see. Its listening socket is close-on-exec: the
// launcher's ranks do not inherit it.
class RelayThread {
 public:
  RelayThread(int world_size, const JobSecret& secret, uint64_t max_frame_bytes, std::chrono::milliseconds timeout);
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
void check_relay_address(const std::string& address, const std::string& option = "--relay");

// A rank's connection to the relay.
class RelayClient {
 public:
  // `address` is host:port (an IPv4 address or a name). Throws std::runtime_error if it cannot
  // connect within `timeout`, PeerError if the relay does not prove it holds the job's secret.
  // Frames from the relay are checked as the relay checks the ranks': at most `max_frame_bytes`, from
  // another of the job's ranks.
  RelayClient(const std::string& address, int rank, int world_size, const JobSecret& secret,
              uint64_t max_frame_bytes, std::chrono::milliseconds timeout);
  ~RelayClient();
  RelayClient(const RelayClient&) = delete;
  RelayClient& operator=(const RelayClient&) = delete;

  // Sends `payload` while receiving the other ranks' payloads of the same all-gather: out[r] for
  // every r != rank (out[rank] is left empty). Throws std::runtime_error when the relay or a rank is
  // gone, or nothing moves for the timeout; PeerError when the relay sends what no all-gather can;
  // std::logic_error when `payload` is over the bound (the bound is wrong for the run).
  std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& payload);

 private:
  int fd_ = -1;
  int rank_ = 0;
  int world_size_ = 1;
  std::chrono::milliseconds timeout_;
  uint64_t max_frame_bytes_;
  std::string relay_;                                    // its address, for messages
  FrameReader inbox_;                                    // bytes read, not yet a whole frame
  std::vector<std::deque<std::vector<uint8_t>>> ahead_;  // by source: frames of this and later all-gathers
};

}  // namespace locosim
