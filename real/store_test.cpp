// The job's store against its own clients and against strangers, on loopback: a connection without
// the job's secret is refused before its first payload byte is read; lengths are bounded before any
// allocation; idle and slow peers hold up no one.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN  // no LibTorch here: doctest's own runner
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "real/store_client.hpp"
#include "real/store_server.hpp"

using namespace locosim;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kWorld = 3;

JobSecret secret_of(uint8_t fill) {
  JobSecret s;
  s.key.fill(fill);
  return s;
}

struct Served {
  StoreServerOptions options;
  JobSecret secret = secret_of(7);
  std::unique_ptr<StoreServer> server;
  explicit Served(StoreLimits limits = {}, int max_connections = 0,
                  std::chrono::milliseconds handshake_timeout = 2000ms) {
    options.world_size = kWorld;
    options.limits = limits;
    options.handshake_timeout = handshake_timeout;
    options.frame_timeout = 2000ms;
    options.max_connections = max_connections;
    server = std::make_unique<StoreServer>(options, secret);
  }
  std::unique_ptr<StoreClient> client(int rank = 0) {
    return std::make_unique<StoreClient>("127.0.0.1", server->port(), secret, rank, kWorld, 2000ms, options.limits);
  }
  int raw() { return connect_to("127.0.0.1", server->port(), Clock::now() + 2s); }
};

StoreReply set(StoreClient& c, const std::string& key, std::vector<uint8_t> value) {
  return c.call({StoreOp::set, {key}, std::move(value), {}, 0}, 0ms, 2000ms);
}
bool has(StoreClient& c, const std::string& key) {
  return c.call({StoreOp::check, {key}, {}, {}, 0}, 0ms, 2000ms).value == std::vector<uint8_t>{1};
}

// A framed request as a legitimate client would send it.
std::vector<uint8_t> framed(const StoreRequest& r) {
  std::vector<uint8_t> body = encode_request(r), out(4);
  const uint32_t n = static_cast<uint32_t>(body.size());
  std::memcpy(out.data(), &n, 4);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// Whether the server closed `fd` (a read returns end of stream or an error within the wait).
bool closed_by_server(int fd, std::chrono::milliseconds wait = 3000ms) {
  uint8_t byte;
  while (true) {
    if (!read_exactly(fd, &byte, 1, Clock::now() + wait)) return errno != ETIMEDOUT;
  }
}

}  // namespace

TEST_CASE("the store serves its ranks: set, get, add, compare_set, check, erase, count, wait") {
  Served s;
  auto a = s.client(0), b = s.client(2);
  set(*a, "x", {1, 2, 3});
  CHECK(b->call({StoreOp::get, {"x"}, {}, {}, 1000}, 1000ms, 2000ms).value == std::vector<uint8_t>{1, 2, 3});
  CHECK(int64_from(a->call({StoreOp::add, {"n"}, {}, {}, 5}, 0ms, 2000ms).value) == 5);
  CHECK(int64_from(b->call({StoreOp::add, {"n"}, {}, {}, -2}, 0ms, 2000ms).value) == 3);
  CHECK(a->call({StoreOp::compare_set, {"x"}, {9}, {1, 2, 3}, 0}, 0ms, 2000ms).value == std::vector<uint8_t>{9});
  CHECK(a->call({StoreOp::compare_set, {"x"}, {8}, {1}, 0}, 0ms, 2000ms).value == std::vector<uint8_t>{9});
  CHECK(int64_from(a->call({StoreOp::count, {}, {}, {}, 0}, 0ms, 2000ms).value) == 2);
  CHECK(a->call({StoreOp::erase, {"x"}, {}, {}, 0}, 0ms, 2000ms).value == std::vector<uint8_t>{1});
  CHECK_FALSE(has(*a, "x"));
  CHECK(a->call({StoreOp::get, {"late"}, {}, {}, 50}, 50ms, 2000ms).status == StoreStatus::timeout);
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    set(*b, "late", {4});
  });
  CHECK(a->call({StoreOp::wait, {"late"}, {}, {}, 2000}, 2000ms, 2000ms).status == StoreStatus::ok);
  writer.join();
}

TEST_CASE("a connection without the job's secret is refused before its first payload byte is read") {
  Served s;
  const int fd = s.raw();
  uint8_t hello[40];
  REQUIRE(read_exactly(fd, hello, sizeof hello, Clock::now() + 2s));
  // A well-formed answer under another secret, then at once a frame that would set a key.
  uint8_t answer[80] = {'L', 'O', 'C', 'O', 'S', 'I', 'M', '1'};
  std::memset(answer + 48, 0xAB, 32);
  std::vector<uint8_t> bytes(answer, answer + sizeof answer);
  const auto frame = framed({StoreOp::set, {"stolen"}, {1}, {}, 0});
  bytes.insert(bytes.end(), frame.begin(), frame.end());
  REQUIRE(write_exactly(fd, bytes.data(), bytes.size(), Clock::now() + 2s));
  CHECK(closed_by_server(fd));
  close(fd);
  auto legit = s.client();
  CHECK_FALSE(has(*legit, "stolen"));
  CHECK(s.server->peers_dropped() == 1);

  // A client holding another job's secret fails its own handshake too (it never sends a request).
  CHECK_THROWS_AS(StoreClient("127.0.0.1", s.server->port(), secret_of(8), 0, kWorld, 2000ms, {}), PeerError);
  // c10d's own store protocol (no handshake): its bytes are never read as a request.
  const int tcpstore = s.raw();
  const uint8_t garbage[64] = {0, 1, 2, 3, 0xFF, 0xFF, 0xFF, 0x7F};
  write_exactly(tcpstore, garbage, sizeof garbage, Clock::now() + 2s);
  CHECK(closed_by_server(tcpstore));
  close(tcpstore);
  CHECK_FALSE(has(*legit, "stolen"));
}

TEST_CASE("the store refuses a claimed rank outside the job, and the relay's proof") {
  Served s;
  CHECK_THROWS_AS(StoreClient("127.0.0.1", s.server->port(), s.secret, kWorld, kWorld, 2000ms, {}), PeerError);
  CHECK_THROWS_AS(StoreClient("127.0.0.1", s.server->port(), s.secret, -7, kWorld, 2000ms, {}), PeerError);
  // The right secret for the relay is not a proof for the store: the service is part of the MAC.
  const int fd = s.raw();
  CHECK_THROWS_AS(authenticate_to_server(fd, s.secret, "relay", 0, kWorld, 2000ms), PeerError);
  close(fd);
  auto legit = s.client(1);
  set(*legit, "ok", {1});
  CHECK(has(*legit, "ok"));
}

TEST_CASE("lengths from an authenticated peer are checked before anything is allocated for them") {
  StoreLimits limits;
  limits.max_frame_bytes = 4096;
  limits.max_total_bytes = 10000;
  Served s(limits);
  auto legit = s.client(0);
  for (uint32_t huge : {0xFFFFFFFFu, 1u << 30, 4097u}) {
    const int fd = s.raw();
    authenticate_to_server(fd, s.secret, "store", 1, kWorld, 2000ms);
    uint8_t prefix[4];
    std::memcpy(prefix, &huge, 4);
    REQUIRE(write_exactly(fd, prefix, 4, Clock::now() + 2s));
    CHECK(closed_by_server(fd));
    close(fd);
  }
  // A field count or size that lies about the frame, an unknown op, a negative timeout: dropped.
  const std::vector<std::vector<uint8_t>> lies = {{1, 0xFF, 0xFF, 0xFF, 0xFF},
                                                  {1, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0x7F},
                                                  {250, 0, 0, 0, 0},
                                                  encode_request({StoreOp::get, {"k"}, {}, {}, -1000})};
  for (const auto& body : lies) {
    const int fd = s.raw();
    authenticate_to_server(fd, s.secret, "store", 2, kWorld, 2000ms);
    std::vector<uint8_t> bytes(4);
    const uint32_t n = static_cast<uint32_t>(body.size());
    std::memcpy(bytes.data(), &n, 4);
    bytes.insert(bytes.end(), body.begin(), body.end());
    REQUIRE(write_exactly(fd, bytes.data(), bytes.size(), Clock::now() + 2s));
    CHECK(closed_by_server(fd));
    close(fd);
  }
  CHECK(s.server->peers_dropped() == 7);
  // Values within the frame bound but past the store's total: a refusal, not growth.
  set(*legit, "a", std::vector<uint8_t>(4000, 1));
  set(*legit, "b", std::vector<uint8_t>(4000, 2));
  CHECK_THROWS_WITH_AS(set(*legit, "c", std::vector<uint8_t>(4000, 3)), doctest::Contains("full"), std::runtime_error);
  CHECK(has(*legit, "b"));
}

TEST_CASE("idle, slow and surplus connections hold up no legitimate rank") {
  // The handshake's deadline outlasts the checks below, so that the strangers hold their slots meanwhile.
  Served s({}, 12, 6000ms);
  std::vector<int> idle;
  for (int i = 0; i < 6; ++i) idle.push_back(s.raw());  // never answer the greeting
  const int slow = s.raw();
  std::atomic<bool> done{false};
  std::thread trickle([&] {  // one byte every 100 ms, as a slowloris would
    const uint8_t b = 'L';
    while (!done && write_exactly(slow, &b, 1, Clock::now() + 1s)) std::this_thread::sleep_for(100ms);
  });
  auto a = s.client(0), b = s.client(1);
  for (int i = 0; i < 50; ++i) set(*a, "k" + std::to_string(i), {static_cast<uint8_t>(i)});
  CHECK(b->call({StoreOp::get, {"k49"}, {}, {}, 1000}, 1000ms, 2000ms).value == std::vector<uint8_t>{49});
  // Past max_connections (12 here: 6 idle + 1 slow + 2 clients so far) strangers are closed at once.
  std::vector<int> extra;
  for (int i = 0; i < 6; ++i) extra.push_back(s.raw());
  int closed = 0;
  for (int fd : extra) closed += closed_by_server(fd, 500ms) ? 1 : 0;
  CHECK(closed == 3);
  // The idle ones are dropped once the handshake's deadline passes; the ranks never noticed.
  for (int fd : idle) CHECK(closed_by_server(fd, 8000ms));
  done = true;
  trickle.join();
  for (int fd : idle) close(fd);
  for (int fd : extra) close(fd);
  close(slow);
  CHECK(has(*a, "k0"));
}

TEST_CASE("the servers' listening sockets are close-on-exec: a launcher's ranks never inherit them") {
  // The relay (RelayThread, on the --spawn launcher's thread) and the store listen through listen_on.
  const int listener = listen_on("127.0.0.1", 0, 8);
  CHECK((fcntl(listener, F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(bound_port(listener) != 0);
  const int client = connect_to("127.0.0.1", bound_port(listener), Clock::now() + 2s);
  CHECK((fcntl(client, F_GETFD) & FD_CLOEXEC) != 0);
  close(client);
  close(listener);
}
