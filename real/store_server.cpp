// The job's store: an accept thread and a thread per authenticated connection (see store_server.hpp).
#include "real/store_server.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace locosim {

using Clock = std::chrono::steady_clock;

struct StoreServer::State {
  StoreServerOptions options;
  JobSecret secret;
  int listener = -1;
  int wake[2] = {-1, -1};  // a byte on wake[1] stops the accept thread
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> dropped{0};

  std::mutex mutex;  // guards everything below
  std::condition_variable changed;
  std::map<std::string, std::vector<uint8_t>> values;
  uint64_t held_bytes = 0;
  std::map<int, std::thread> connections;  // by socket: each one's thread
  std::vector<std::thread> ended;          // threads whose connection closed, for the acceptor to join
  std::thread acceptor;

  void drop(int fd, const std::string& why) {
    ++dropped;
    if (!stopping) std::fprintf(stderr, "locosim-real: store: %s; connection dropped\n", why.c_str());
    shutdown(fd, SHUT_RDWR);
  }

  // Waits until `ready` holds (true) or the deadline passes (false); the lock is held on return.
  template <class Ready>
  bool wait_until(std::unique_lock<std::mutex>& lock, int64_t timeout_ms, Ready ready) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(std::min<int64_t>(timeout_ms, 1LL << 40));
    return changed.wait_until(lock, deadline, [&] { return stopping || ready(); }) && !stopping;
  }

  bool all_there(const std::vector<std::string>& keys) {
    for (const auto& k : keys) {
      if (!values.count(k)) return false;
    }
    return true;
  }

  // Stores `value` at `key` if the store's total stays within its bound.
  bool put(const std::string& key, std::vector<uint8_t> value) {
    auto it = values.find(key);
    const uint64_t old = it == values.end() ? 0 : it->second.size();
    if (it == values.end() && values.size() >= options.limits.max_keys_held) return false;
    if (held_bytes - old + value.size() > options.limits.max_total_bytes) return false;
    held_bytes = held_bytes - old + value.size();
    values[key] = std::move(value);
    changed.notify_all();
    return true;
  }

  StoreReply refuse(const std::string& why) { return {StoreStatus::refused, {}, why}; }

  StoreReply serve(StoreRequest& r) {
    std::unique_lock<std::mutex> lock(mutex);
    const std::string& key = r.keys.empty() ? std::string() : r.keys[0];
    switch (r.op) {
      case StoreOp::set:
        if (!put(key, std::move(r.value))) return refuse("the store is full (" + std::to_string(held_bytes) + " bytes)");
        return {};
      case StoreOp::get:
        if (!wait_until(lock, r.number, [&] { return values.count(key) > 0; })) return {StoreStatus::timeout, {}, {}};
        return {StoreStatus::ok, values[key], {}};
      case StoreOp::add: {
        auto it = values.find(key);
        const int64_t now = (it == values.end() ? 0 : int64_from(it->second)) + r.number;
        if (!put(key, int64_bytes(now))) return refuse("the store is full");
        return {StoreStatus::ok, int64_bytes(now), {}};
      }
      case StoreOp::compare_set: {
        auto it = values.find(key);
        if (it == values.end() ? r.expected.empty() : it->second == r.expected) {
          if (!put(key, r.value)) return refuse("the store is full");
          return {StoreStatus::ok, r.value, {}};
        }
        return {StoreStatus::ok, it == values.end() ? r.expected : it->second, {}};
      }
      case StoreOp::check: return {StoreStatus::ok, {static_cast<uint8_t>(all_there(r.keys))}, {}};
      case StoreOp::erase: {
        auto it = values.find(key);
        if (it == values.end()) return {StoreStatus::ok, {0}, {}};
        held_bytes -= it->second.size();
        values.erase(it);
        changed.notify_all();
        return {StoreStatus::ok, {1}, {}};
      }
      case StoreOp::count: return {StoreStatus::ok, int64_bytes(static_cast<int64_t>(values.size())), {}};
      case StoreOp::wait:
        if (!wait_until(lock, r.number, [&] { return all_there(r.keys); })) return {StoreStatus::timeout, {}, {}};
        return {};
    }
    return refuse("unknown op");
  }

  // A legitimate rank may stay quiet for as long as it trains: between frames the thread only
  // watches for its bytes and for the server stopping. Once a frame has begun, it must be whole
  // within frame_timeout.
  bool next_frame(int fd, std::vector<uint8_t>& frame) {
    uint8_t prefix[4];
    while (true) {
      pollfd p{fd, POLLIN, 0};
      const int ready = poll(&p, 1, 200);
      if (stopping) return false;
      if (ready > 0) break;
      if (ready < 0 && errno != EINTR) return false;
    }
    const auto deadline = Clock::now() + options.frame_timeout;
    if (!read_exactly(fd, prefix, sizeof prefix, deadline)) {
      if (errno != 0) throw PeerError("a frame's length did not arrive whole");
      return false;  // the peer closed its connection between frames: done
    }
    frame.resize(frame_length(prefix, options.limits));
    if (!read_exactly(fd, frame.data(), frame.size(), deadline)) {
      throw PeerError("a frame of " + std::to_string(frame.size()) + " bytes did not arrive whole within " +
                      std::to_string(options.frame_timeout.count() / 1000) + " s");
    }
    return true;
  }

  void serve_connection(int fd) {
    const std::string peer = peer_name(fd);
    try {
      const int rank = authenticate_client(fd, secret, "store", options.world_size, options.handshake_timeout);
      const std::string who = peer + " (rank " + std::to_string(rank) + ")";
      std::vector<uint8_t> frame;
      while (!stopping) {
        try {
          if (!next_frame(fd, frame)) break;
          StoreRequest request = decode_request(frame.data(), frame.size(), options.limits);
          const std::vector<uint8_t> reply = framed(encode_reply(serve(request)));
          if (!write_exactly(fd, reply.data(), reply.size(), Clock::now() + options.frame_timeout)) break;
        } catch (const std::exception& e) {
          throw PeerError(who + " " + e.what());
        }
      }
    } catch (const std::exception& e) {
      drop(fd, e.what());
    }
    std::lock_guard<std::mutex> lock(mutex);
    auto node = connections.extract(fd);  // present: the acceptor inserted it before this thread could lock
    ended.push_back(std::move(node.mapped()));
    close(fd);
  }

  void join_ended() {
    std::vector<std::thread> done;
    {
      std::lock_guard<std::mutex> lock(mutex);
      done.swap(ended);
    }
    for (auto& t : done) t.join();
  }

  void accept_loop() {
    const int limit = options.max_connections > 0 ? options.max_connections : 32 + 8 * options.world_size;
    while (!stopping) {
      pollfd p[2] = {{listener, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (poll(p, 2, -1) < 0 && errno != EINTR) break;
      if (stopping || (p[1].revents & POLLIN)) break;
      join_ended();
      if (!(p[0].revents & POLLIN)) continue;
      const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      // A reply goes at once: Nagle's algorithm would hold it for the client's delayed ACK (40 ms a
      // request; rank 0 reads thousands of row chunks at the end of a run).
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard<std::mutex> lock(mutex);
      if (static_cast<int>(connections.size()) >= limit) {
        ++dropped;
        close(fd);  // past what the job can need: refused without a word
        continue;
      }
      connections[fd] = std::thread([this, fd] { serve_connection(fd); });
    }
  }
};

StoreServer::StoreServer(const StoreServerOptions& options, const JobSecret& secret)
    : state_(std::make_shared<State>()) {
  auto& s = *state_;
  s.options = options;
  s.secret = secret;
  // Room for every rank's connections at once: the backlog never refuses a legitimate rank.
  s.listener = listen_on(options.address, options.port, 64 + 8 * options.world_size);
  if (pipe2(s.wake, O_CLOEXEC) != 0) {
    close(s.listener);
    throw std::runtime_error("store: cannot make a pipe");
  }
  s.acceptor = std::thread([&s] { s.accept_loop(); });
}

StoreServer::~StoreServer() {
  auto& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stopping = true;
    for (auto& [fd, thread] : s.connections) shutdown(fd, SHUT_RDWR);
  }
  s.changed.notify_all();
  const char byte = 1;
  (void)!write(s.wake[1], &byte, 1);
  s.acceptor.join();
  // No thread is added once the acceptor has ended; each one still running moves itself to `ended`.
  while (true) {
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (s.connections.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  s.join_ended();
  close(s.listener);
  close(s.wake[0]);
  close(s.wake[1]);
}

uint16_t StoreServer::port() const { return bound_port(state_->listener); }
int64_t StoreServer::peers_dropped() const { return state_->dropped; }

}  // namespace locosim
