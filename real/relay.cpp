// The relay of a real cluster (see relay.hpp): a reader thread and a writer thread per rank.
#include "real/relay.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "report/stop_signals.hpp"

namespace locosim {
namespace {

std::runtime_error error(const std::string& what) {
  return std::runtime_error("relay: " + what + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

void no_delay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Blocking writes and reads of whole buffers; MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE.
bool write_all(int fd, const void* data, size_t n) {
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

// False at the end of the stream or on an error.
bool read_all(int fd, void* data, size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t k = recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

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

}  // namespace

void serve_relay(uint16_t port, int world_size, std::chrono::milliseconds timeout,
                 const std::function<void(uint16_t port)>& on_listening) {
  errno = 0;
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) throw error("socket");
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(port);
  socklen_t len = sizeof addr;
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listener, world_size) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const auto e = error("cannot listen on port " + std::to_string(port));
    close(listener);
    throw e;
  }
  if (on_listening) on_listening(ntohs(addr.sin_port));

  std::vector<int> fds(static_cast<size_t>(world_size), -1);
  auto close_all = [&] {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  };
  for (int connected = 0; connected < world_size;) {
    pollfd p{listener, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      close(listener);
      close_all();
      errno = 0;
      throw error(std::to_string(world_size - connected) + " of " + std::to_string(world_size) +
                  " ranks did not connect within " + std::to_string(timeout.count() / 1000) + " s");
    }
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) continue;
    int64_t rank = -1;
    if (!read_all(fd, &rank, sizeof rank) || rank < 0 || rank >= world_size || fds[rank] >= 0) {
      close(fd);  // not one of ours, or a rank twice: ignored
      continue;
    }
    no_delay(fd);
    fds[rank] = fd;
    ++connected;
  }
  close(listener);

  std::vector<Outbox> outboxes(static_cast<size_t>(world_size));
  std::vector<std::thread> writers, readers;
  for (int r = 0; r < world_size; ++r) {
    writers.emplace_back([&, r] {
      bool ok = true;  // after a failed write (the rank is gone) the rest is dropped
      while (auto f = outboxes[r].pop()) {
        const int64_t head[2] = {f->source, static_cast<int64_t>(f->bytes.size())};
        ok = ok && write_all(fds[r], head, sizeof head) && write_all(fds[r], f->bytes.data(), f->bytes.size());
      }
    });
    readers.emplace_back([&, r] {
      while (true) {
        int64_t n = 0;
        if (!read_all(fds[r], &n, sizeof n) || n < 0) break;  // the rank closed its connection: done
        auto f = std::make_shared<Frame>();
        f->source = r;
        f->bytes.resize(static_cast<size_t>(n));
        if (!read_all(fds[r], f->bytes.data(), f->bytes.size())) break;
        for (int to = 0; to < world_size; ++to) {
          if (to != r) outboxes[to].push(f);  // forwarded once the whole payload is here
        }
      }
    });
  }
  for (auto& t : readers) t.join();
  for (auto& box : outboxes) box.close();
  for (auto& t : writers) t.join();
  close_all();
}

struct RelayThread::State {
  std::promise<uint16_t> listening;
  std::thread thread;
};

RelayThread::RelayThread(int world_size, std::chrono::milliseconds timeout) : state_(std::make_shared<State>()) {
  auto port = state_->listening.get_future();
  state_->thread = std::thread([state = state_, world_size, timeout] {
    StopSignals::block_in_this_thread();
    try {
      serve_relay(0, world_size, timeout, [&](uint16_t p) { state->listening.set_value(p); });
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

void check_relay_address(const std::string& address) {
  const size_t colon = address.rfind(':');
  const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  if (colon == 0 || port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) < 1 || std::stoi(port) > 65535) {
    throw std::invalid_argument("--relay " + address + ": expected host:port (a port from 1 to 65535)");
  }
}

RelayClient::RelayClient(const std::string& address, int rank, int world_size, std::chrono::milliseconds timeout)
    : rank_(rank), world_size_(world_size), timeout_(timeout), ahead_(static_cast<size_t>(world_size)) {
  check_relay_address(address);
  const size_t colon = address.rfind(':');
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {  // the relay may start after this rank
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) == 0) {
      fd_ = socket(AF_INET, SOCK_STREAM, 0);
      if (fd_ >= 0 && connect(fd_, found->ai_addr, found->ai_addrlen) == 0) {
        freeaddrinfo(found);
        break;
      }
      if (fd_ >= 0) close(fd_);
      fd_ = -1;
      freeaddrinfo(found);
    }
    if (std::chrono::steady_clock::now() > deadline) throw error("cannot connect to " + address);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  no_delay(fd_);
  const int64_t hello = rank;
  if (!write_all(fd_, &hello, sizeof hello)) {
    close(fd_);
    throw error("the relay at " + address + " closed the connection");
  }
}

RelayClient::~RelayClient() {
  if (fd_ >= 0) close(fd_);
}

std::vector<std::vector<uint8_t>> RelayClient::all_gather(const std::vector<uint8_t>& payload) {
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
      if (k > 0) inbox_.insert(inbox_.end(), buffer.begin(), buffer.begin() + k);
      size_t at = 0;  // whole frames out of the inbox
      while (inbox_.size() - at >= 2 * sizeof(int64_t)) {
        int64_t head[2];
        std::memcpy(head, inbox_.data() + at, sizeof head);
        if (head[0] < 0 || head[0] >= world_size_ || head[0] == rank_ || head[1] < 0) {
          errno = 0;
          throw error("a malformed frame from the relay");
        }
        const size_t whole = sizeof head + static_cast<size_t>(head[1]);
        if (inbox_.size() - at < whole) break;
        ahead_[head[0]].emplace_back(inbox_.begin() + at + sizeof head, inbox_.begin() + at + whole);
        at += whole;
      }
      inbox_.erase(inbox_.begin(), inbox_.begin() + at);
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
