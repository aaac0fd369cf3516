// The relay of a real cluster (see relay.hpp): a handshake thread per pending connection while the
// ranks arrive, then a reader thread and a writer thread per rank.
#include "real/relay.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "report/stop_signals.hpp"

namespace locosim {
namespace {

using Clock = std::chrono::steady_clock;

std::runtime_error error(const std::string& what) {
  return std::runtime_error("relay: " + what + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

// Room for the job's ranks and as many strangers again, several times over: a crowd of strangers
// fills the backlog, never the ranks' own connections out of it.
int backlog_for(int world_size) { return std::max(64, 4 * world_size); }

// Refusals reported on stderr: enough to see who knocked, not a log a stranger can fill.
constexpr int kRefusalsReported = 20;

// The ranks' connections while they arrive: each is authenticated on a thread of its own, so a
// stranger, or a client that says nothing, holds up no one.
struct Admission {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> fds;    // by rank: the first connection to prove it; -1 until then
  int admitted = 0;
  std::set<int> pending;   // connections mid-handshake
  int running = 0;         // handshake threads not yet done
  bool closed = false;     // every rank is in (or the relay gave up): late proofs are refused
  int refusals = 0;

  void report(const std::string& refusal) {  // REQUIRES: mutex held
    if (++refusals <= kRefusalsReported) std::fprintf(stderr, "locosim-real: relay: %s\n", refusal.c_str());
    if (refusals == kRefusalsReported) std::fprintf(stderr, "locosim-real: relay: further refusals not reported\n");
  }
};

void handshake(const std::shared_ptr<Admission>& a, int fd, const JobSecret& secret, int world_size,
               std::chrono::milliseconds timeout) {
  std::string refusal;
  int rank = -1;
  try {
    rank = authenticate_client(fd, secret, "relay", world_size, timeout);
  } catch (const std::exception& e) {
    refusal = e.what();
  }
  std::lock_guard<std::mutex> lock(a->mutex);
  a->pending.erase(fd);
  if (refusal.empty() && (a->closed || a->fds[rank] >= 0)) {
    refusal = peer_name(fd) + " proved rank " + std::to_string(rank) +
              ", which another connection holds: refused (the first keeps it)";
  }
  if (refusal.empty()) {
    a->fds[rank] = fd;
    ++a->admitted;
  } else {
    if (!a->closed) a->report(refusal);  // once closed, pending handshakes are cut short on purpose
    close(fd);
  }
  --a->running;
  a->changed.notify_all();
}

// Accepts connections until every rank has proved itself; returns their sockets by rank. Throws when
// `timeout` passes without a rank proving itself while some are missing.
std::vector<int> admit_ranks(int listener, int world_size, const JobSecret& secret, std::chrono::milliseconds timeout) {
  auto a = std::make_shared<Admission>();
  a->fds.assign(static_cast<size_t>(world_size), -1);
  auto deadline = Clock::now() + timeout;
  int admitted_seen = 0;
  std::string failure;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(a->mutex);
      if (a->admitted == world_size) break;
      if (a->admitted > admitted_seen) {  // progress: the next rank gets a full timeout too
        admitted_seen = a->admitted;
        deadline = Clock::now() + timeout;
      }
      if (Clock::now() >= deadline) {
        failure = std::to_string(world_size - a->admitted) + " of " + std::to_string(world_size) +
                  " ranks did not connect within " + std::to_string(timeout.count() / 1000) + " s";
        break;
      }
    }
    pollfd p{listener, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;  // a short wait: the handshake threads' progress is checked
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    {
      std::lock_guard<std::mutex> lock(a->mutex);
      if (static_cast<int>(a->pending.size()) >= backlog_for(world_size)) {
        a->report(peer_name(fd) + ": refused, " + std::to_string(a->pending.size()) +
                  " connections are already proving themselves");
        close(fd);
        continue;
      }
      a->pending.insert(fd);
      ++a->running;
    }
    try {
      std::thread([a, fd, &secret, world_size, timeout] { handshake(a, fd, secret, world_size, timeout); }).detach();
    } catch (const std::system_error&) {  // no thread to be had now: this connection is dropped
      std::lock_guard<std::mutex> lock(a->mutex);
      a->pending.erase(fd);
      --a->running;
      close(fd);
    }
  }
  // Cut the handshakes still running short, and wait for them: they hold `secret` by reference.
  std::unique_lock<std::mutex> lock(a->mutex);
  a->closed = true;
  for (int fd : a->pending) shutdown(fd, SHUT_RDWR);
  a->changed.wait(lock, [&] { return a->running == 0; });
  if (!failure.empty()) {
    for (int fd : a->fds) {
      if (fd >= 0) close(fd);
    }
    errno = 0;
    throw error(failure);
  }
  return a->fds;
}

// One frame on its way from its source to the other ranks.
struct Frame {
  int64_t source = 0;
  std::vector<uint8_t> bytes;
};

// The frames waiting for one rank's downlink.
struct Outbox {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::shared_ptr<const Frame>> frames;
  bool closed = false;

  void push(std::shared_ptr<const Frame> f) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      frames.push_back(std::move(f));
    }
    ready.notify_one();
  }
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      closed = true;
    }
    ready.notify_one();
  }
  // The next frame, or null once closed and empty.
  std::shared_ptr<const Frame> pop() {
    std::unique_lock<std::mutex> lock(mutex);
    ready.wait(lock, [&] { return closed || !frames.empty(); });
    if (frames.empty()) return nullptr;
    auto f = std::move(frames.front());
    frames.pop_front();
    return f;
  }
};

// The ranks' connections once all are in.
struct Forwarding {
  int world_size;
  uint64_t max_frame_bytes;
  std::chrono::milliseconds timeout;
  std::vector<int> fds;
  std::vector<std::string> peers;  // "rank 1 (127.0.0.1:40112)"
  std::vector<Outbox> outboxes;
  std::mutex mutex;
  std::vector<int64_t> frames_read;  // by source
  std::string failure;               // the first peer that broke the protocol, and how

  Forwarding(std::vector<int> rank_fds, uint64_t max_bytes, std::chrono::milliseconds t)
      : world_size(static_cast<int>(rank_fds.size())),
        max_frame_bytes(max_bytes),
        timeout(t),
        fds(std::move(rank_fds)),
        outboxes(fds.size()),
        frames_read(fds.size(), 0) {
    for (int r = 0; r < world_size; ++r) peers.push_back("rank " + std::to_string(r) + " (" + peer_name(fds[r]) + ")");
  }

  // Static groups: one rank broken breaks every all-gather, so every connection is shut down at once
  // (the readers and writers see it and end) rather than left to the ranks' timeouts.
  void fail(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!failure.empty()) return;
    failure = why;
    for (int fd : fds) shutdown(fd, SHUT_RDWR);
  }

  // Forwards a whole frame of rank r. A rank sends its k-th frame once it holds every other rank's
  // (k-1)-th: a source further ahead is not running all-gathers, and the frames it would pile up in
  // the others' outboxes are refused.
  bool forward(int r, std::vector<uint8_t> bytes) {
    auto f = std::make_shared<Frame>();
    f->source = r;
    f->bytes = std::move(bytes);
    std::string broken;
    {
      std::lock_guard<std::mutex> lock(mutex);
      const int64_t k = ++frames_read[r];
      for (int s = 0; s < world_size && broken.empty(); ++s) {
        if (s != r && k > frames_read[s] + 1) {
          broken = peers[r] + " sent its all-gather frame " + std::to_string(k) + " before rank " + std::to_string(s) +
                   "'s frame " + std::to_string(k - 1) + " reached it: not an all-gather";
        }
      }
      if (broken.empty()) {
        for (int to = 0; to < world_size; ++to) {
          if (to != r) outboxes[to].push(f);  // forwarded once the whole payload is here
        }
      }
    }
    if (!broken.empty()) fail(broken);
    return broken.empty();
  }

  void read_from(int r) {
    FrameReader in = FrameReader::uplink(r, max_frame_bytes);
    std::vector<uint8_t> buffer(1 << 16);
    while (true) {
      pollfd p{fds[r], POLLIN, 0};
      // Between frames a rank may compute for as long as it likes; inside one it must keep sending.
      const int ready = poll(&p, 1, in.mid_frame() ? static_cast<int>(timeout.count()) : -1);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        return fail(peers[r] + " was silent for " + std::to_string(timeout.count() / 1000) +
                    " s in the middle of a frame");
      }
      const ssize_t k = recv(fds[r], buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (k < 0) return fail(peers[r] + ": " + std::strerror(errno));
      if (k == 0) {  // the rank closed its connection: done, unless it stopped inside a frame
        if (in.mid_frame()) fail(peers[r] + " closed its connection in the middle of a frame");
        return;
      }
      try {
        in.feed(buffer.data(), static_cast<size_t>(k));
      } catch (const FrameError& e) {
        return fail(peers[r] + " sent " + e.what());
      }
      while (in.has_frame()) {
        if (!forward(r, in.next().bytes)) return;
      }
    }
  }

  void write_to(int r) {
    bool ok = true;  // after a failed write the rest is dropped (the relay is failing)
    while (auto f = outboxes[r].pop()) {
      if (!ok) continue;
      const int64_t head[2] = {f->source, static_cast<int64_t>(f->bytes.size())};
      ok = send_all(fds[r], head, sizeof head) && send_all(fds[r], f->bytes.data(), f->bytes.size());
      if (!ok) {
        fail(peers[r] + (errno == EAGAIN || errno == EWOULDBLOCK
                             ? " took nothing of its downlink for " + std::to_string(timeout.count() / 1000) + " s"
                             : std::string(" is gone: ") + std::strerror(errno)));
      }
    }
  }

  // A blocking send of a whole buffer; SO_SNDTIMEO (the timeout) bounds each wait for room.
  static bool send_all(int fd, const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
      const ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return false;
      p += k;
      n -= static_cast<size_t>(k);
    }
    return true;
  }
};

}  // namespace

void serve_relay(const std::string& address, uint16_t port, int world_size, const JobSecret& secret,
                 uint64_t max_frame_bytes, std::chrono::milliseconds timeout,
                 const std::function<void(uint16_t port)>& on_listening) {
  int listener = -1;
  try {
    listener = listen_on(address, port, backlog_for(world_size));
  } catch (const std::exception& e) {
    errno = 0;
    throw error(e.what());
  }
  std::vector<int> fds;
  try {
    if (on_listening) on_listening(bound_port(listener));
    fds = admit_ranks(listener, world_size, secret, timeout);
  } catch (...) {
    close(listener);
    throw;
  }
  close(listener);  // every rank is in: no one else gets to knock

  timeval send_timeout{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  for (int fd : fds) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  }
  Forwarding relay(std::move(fds), max_frame_bytes, timeout);
  std::vector<std::thread> writers, readers;
  for (int r = 0; r < world_size; ++r) {
    writers.emplace_back([&relay, r] { relay.write_to(r); });
    readers.emplace_back([&relay, r] { relay.read_from(r); });
  }
  for (auto& t : readers) t.join();
  for (auto& box : relay.outboxes) box.close();
  for (auto& t : writers) t.join();
  for (int fd : relay.fds) close(fd);
  if (!relay.failure.empty()) throw PeerError("relay: " + relay.failure);
}

struct RelayThread::State {
  std::promise<uint16_t> listening;
  std::thread thread;
};

RelayThread::RelayThread(int world_size, const JobSecret& secret, uint64_t max_frame_bytes,
                         std::chrono::milliseconds timeout)
    : state_(std::make_shared<State>()) {
  auto port = state_->listening.get_future();
  state_->thread = std::thread([state = state_, world_size, secret, max_frame_bytes, timeout] {
    StopSignals::block_in_this_thread();
    try {
      serve_relay("127.0.0.1", 0, world_size, secret, max_frame_bytes, timeout,
                  [&](uint16_t p) { state->listening.set_value(p); });
    } catch (const std::exception& e) {
      try {
        state->listening.set_exception(std::current_exception());
      } catch (const std::future_error&) {  // it was listening: the ranks report what failed
        std::fprintf(stderr, "locosim-real: %s\n", e.what());
      }
    }
  });
  try {
    port_ = port.get();
  } catch (...) {
    state_->thread.join();
    throw;
  }
}

RelayThread::~RelayThread() { finish(false); }

void RelayThread::finish(bool ranks_done) {
  if (!state_->thread.joinable()) return;
  if (ranks_done) {
    state_->thread.join();  // every rank has disconnected: it ends now
  } else {
    state_->thread.detach();
  }
}

void check_relay_address(const std::string& address, const std::string& option) {
  const size_t colon = address.rfind(':');
  const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  if (colon == 0 || port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) < 1 || std::stoi(port) > 65535) {
    throw std::invalid_argument(option + " " + address + ": expected host:port (a port from 1 to 65535)");
  }
}

RelayClient::RelayClient(const std::string& address, int rank, int world_size, const JobSecret& secret,
                         uint64_t max_frame_bytes, std::chrono::milliseconds timeout)
    : rank_(rank),
      world_size_(world_size),
      timeout_(timeout),
      max_frame_bytes_(max_frame_bytes),
      relay_(address),
      inbox_(FrameReader::downlink(world_size, rank, max_frame_bytes)),
      ahead_(static_cast<size_t>(world_size)) {
  check_relay_address(address);
  const size_t colon = address.rfind(':');
  const auto port = static_cast<uint16_t>(std::stoi(address.substr(colon + 1)));
  try {
    fd_ = connect_to(address.substr(0, colon), port, Clock::now() + timeout);  // the relay may start after this rank
  } catch (const std::exception& e) {
    errno = 0;
    throw error(e.what());
  }
  try {
    authenticate_to_server(fd_, secret, "relay", rank, world_size, timeout);
  } catch (...) {
    close(fd_);
    throw;
  }
}

RelayClient::~RelayClient() {
  if (fd_ >= 0) close(fd_);
}

std::vector<std::vector<uint8_t>> RelayClient::all_gather(const std::vector<uint8_t>& payload) {
  if (payload.size() > max_frame_bytes_) {  // the relay would refuse it: say why here
    throw std::logic_error("relay: this rank's payload of " + std::to_string(payload.size()) +
                           " bytes is over the run's bound of " + std::to_string(max_frame_bytes_) + " bytes");
  }
  std::vector<uint8_t> frame(sizeof(int64_t) + payload.size());
  const int64_t n = static_cast<int64_t>(payload.size());
  std::memcpy(frame.data(), &n, sizeof n);
  std::memcpy(frame.data() + sizeof n, payload.data(), payload.size());
  size_t sent = 0;
  auto complete = [&] {
    for (int r = 0; r < world_size_; ++r) {
      if (r != rank_ && ahead_[r].empty()) return false;
    }
    return true;
  };
  std::vector<uint8_t> buffer(1 << 20);
  // Sends and receives at once: the others' payloads come down while this one goes up.
  while (sent < frame.size() || !complete()) {
    pollfd p{fd_, static_cast<short>(POLLIN | (sent < frame.size() ? POLLOUT : 0)), 0};
    const int ready = poll(&p, 1, static_cast<int>(timeout_.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw error("poll");
    if (ready == 0) {
      errno = 0;
      throw error("nothing moved for " + std::to_string(timeout_.count() / 1000) + " s (a rank lost?)");
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t k = recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
        if (k == 0) errno = 0;
        throw error("the relay closed the connection (a rank was lost, or the relay stopped)");
      }
      try {
        if (k > 0) inbox_.feed(buffer.data(), static_cast<size_t>(k));
      } catch (const FrameError& e) {
        throw PeerError("relay: the relay at " + relay_ + " sent " + e.what());
      }
      while (inbox_.has_frame()) {
        RelayFrame f = inbox_.next();
        // A source sends its next frame once it holds this rank's current one: two are the most
        // an all-gather can see from it.
        if (ahead_[f.source].size() >= 2) {
          throw PeerError("relay: the relay at " + relay_ + " sent a third frame of rank " + std::to_string(f.source) +
                          " before this rank's all-gather took the first: not an all-gather");
        }
        ahead_[f.source].push_back(std::move(f.bytes));
      }
    }
    if ((p.revents & POLLOUT) && sent < frame.size()) {
      const ssize_t k = send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k < 0 && errno != EAGAIN && errno != EINTR) throw error("the relay closed the connection");
      if (k > 0) sent += static_cast<size_t>(k);
    }
  }
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(world_size_));
  for (int r = 0; r < world_size_; ++r) {
    if (r == rank_) continue;
    out[r] = std::move(ahead_[r].front());
    ahead_[r].pop_front();
  }
  return out;
}

}  // namespace locosim
