// The relay against its ranks and against strangers, on loopback: a connection without the job's
// secret is refused before its first payload byte is read; a rank claimed twice keeps its first
// holder; lengths are bounded before any allocation; idle and slow peers hold up no one; a rank's
// client checks what comes down as the relay checks what goes up.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN  // no LibTorch here: doctest's own runner
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "real/relay.hpp"

using namespace locosim;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kMaxFrameBytes = 1 << 16;

JobSecret secret_of(uint8_t fill) {
  JobSecret s;
  s.key.fill(fill);
  return s;
}

// serve_relay on a thread of the test, on 127.0.0.1.
class Relay {
 public:
  Relay(int world_size, std::chrono::milliseconds timeout) : state_(std::make_shared<State>()) {
    auto bound = state_->listening.get_future();
    // The thread holds the state: a relay that never ends (a failed test) outlives this object safely.
    std::thread([state = state_, world_size, timeout] {
      try {
        serve_relay("127.0.0.1", 0, world_size, state->secret, kMaxFrameBytes, timeout,
                    [&](uint16_t p) { state->listening.set_value(p); });
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(state->mutex);
        state->error = e.what();
        try {
          state->listening.set_value(0);  // it failed before listening
        } catch (const std::future_error&) {
        }
      }
      std::lock_guard<std::mutex> lock(state->mutex);
      state->done = true;
      state->ended.notify_all();
    }).detach();
    port = bound.get();
  }

  const JobSecret& secret() const { return state_->secret; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  std::unique_ptr<RelayClient> client(int rank, int world_size, std::chrono::milliseconds timeout = 3000ms) {
    return std::make_unique<RelayClient>(address(), rank, world_size, secret(), kMaxFrameBytes, timeout);
  }
  // Whether the relay ended within `wait`.
  bool finished(std::chrono::milliseconds wait = 5000ms) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    return state_->ended.wait_for(lock, wait, [&] { return state_->done; });
  }
  std::string error() {  // what serve_relay threw, once finished
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->error;
  }

  uint16_t port = 0;

 private:
  struct State {
    JobSecret secret = secret_of(7);
    std::promise<uint16_t> listening;
    std::mutex mutex;
    std::condition_variable ended;
    bool done = false;
    std::string error;
  };
  std::shared_ptr<State> state_;
};

// A connection that proved `rank` and speaks the frames by hand.
int raw_rank(uint16_t port, const JobSecret& secret, int rank, int world_size) {
  const int fd = connect_to("127.0.0.1", port, Clock::now() + 2s);
  authenticate_to_server(fd, secret, "relay", rank, world_size, 2000ms);
  return fd;
}

void send_i64(int fd, int64_t v) { REQUIRE(write_exactly(fd, &v, sizeof v, Clock::now() + 2s)); }

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// Both ranks of a two-rank job run one all-gather at once; returns what each received from the other.
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> gather_pair(RelayClient& r0, RelayClient& r1) {
  auto other = std::async(std::launch::async, [&] { return r1.all_gather(bytes_of("from rank 1"))[0]; });
  auto mine = r0.all_gather(bytes_of("from rank 0"))[1];
  return {mine, other.get()};
}

}  // namespace

TEST_CASE("relay: frames come whole out of any split of the stream, each header checked first") {
  std::vector<uint8_t> stream;
  std::set<size_t> frame_ends;
  auto frame = [&](int64_t source, const std::string& text) {
    const int64_t n = static_cast<int64_t>(text.size());
    stream.insert(stream.end(), reinterpret_cast<const uint8_t*>(&source), reinterpret_cast<const uint8_t*>(&source) + 8);
    stream.insert(stream.end(), reinterpret_cast<const uint8_t*>(&n), reinterpret_cast<const uint8_t*>(&n) + 8);
    stream.insert(stream.end(), text.begin(), text.end());
    frame_ends.insert(stream.size());
  };
  frame(0, "abc");
  frame(2, "");
  frame(0, "defgh");
  for (size_t piece : {size_t(1), size_t(3), size_t(7), stream.size()}) {
    FrameReader in = FrameReader::downlink(3, 1, 16);
    std::vector<RelayFrame> got;
    for (size_t at = 0; at < stream.size(); at += piece) {
      const size_t n = std::min(piece, stream.size() - at);
      in.feed(stream.data() + at, n);
      CHECK(in.mid_frame() == (frame_ends.count(at + n) == 0));
      while (in.has_frame()) got.push_back(in.next());
    }
    REQUIRE(got.size() == 3);
    CHECK(got[0].source == 0);
    CHECK(got[0].bytes == bytes_of("abc"));
    CHECK(got[1].source == 2);
    CHECK(got[1].bytes.empty());
    CHECK(got[2].bytes == bytes_of("defgh"));
  }

  auto refused = [](FrameReader in, std::vector<int64_t> head) {
    try {
      in.feed(reinterpret_cast<const uint8_t*>(head.data()), head.size() * 8);
    } catch (const FrameError& e) {
      CHECK_THROWS_AS(in.feed(nullptr, 0), FrameError);  // broken for good
      return std::make_pair(e.kind(), std::string(e.what()));
    }
    FAIL("accepted");
    return std::make_pair(FrameError::Kind::bad_source, std::string());
  };
  CHECK(refused(FrameReader::uplink(0, 16), {17}).first == FrameError::Kind::over_bound);
  CHECK(refused(FrameReader::uplink(0, 16), {int64_t(1) << 62}).second.find("4611686018427387904 bytes, over the "
                                                                          "run's bound of 16") != std::string::npos);
  CHECK(refused(FrameReader::uplink(0, 16), {-1}).first == FrameError::Kind::negative_length);
  CHECK(refused(FrameReader::downlink(3, 1, 16), {1, 4}).first == FrameError::Kind::bad_source);  // its own
  CHECK(refused(FrameReader::downlink(3, 1, 16), {3, 4}).first == FrameError::Kind::bad_source);
  CHECK(refused(FrameReader::downlink(3, 1, 16), {-7, 4}).first == FrameError::Kind::bad_source);
}

TEST_CASE("relay: a connection without the job's secret is refused before its first payload byte is read") {
  Relay relay(2, 3000ms);
  const int fd = connect_to("127.0.0.1", relay.port, Clock::now() + 2s);
  uint8_t hello[40];
  REQUIRE(read_exactly(fd, hello, sizeof hello, Clock::now() + 2s));
  // A well-formed answer claiming rank 0 under another secret, then at once a frame for the others.
  uint8_t answer[80] = {'L', 'O', 'C', 'O', 'S', 'I', 'M', '1'};
  std::memset(answer + 48, 0xAB, 32);
  std::vector<uint8_t> bytes(answer, answer + sizeof answer);
  const int64_t n = 4;
  bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(&n), reinterpret_cast<const uint8_t*>(&n) + 8);
  bytes.insert(bytes.end(), {'e', 'v', 'i', 'l'});
  REQUIRE(write_exactly(fd, bytes.data(), bytes.size(), Clock::now() + 2s));
  // Closed with the frame unread in its buffer: the kernel answers with a reset, not an end of stream.
  uint8_t byte;
  CHECK_FALSE(read_exactly(fd, &byte, 1, Clock::now() + 3s));
  CHECK(errno == ECONNRESET);
  close(fd);
  CHECK_THROWS_AS(RelayClient(relay.address(), 1, 2, secret_of(8), kMaxFrameBytes, 2000ms), PeerError);
  // The relay's old protocol, claiming rank 0 at once: once, it took rank 0's slot and rank 1 received
  // its frame as rank 0's.
  const int old = connect_to("127.0.0.1", relay.port, Clock::now() + 2s);
  const int64_t hijack[3] = {0, 4, 0x6c697665};
  REQUIRE(write_exactly(old, hijack, sizeof hijack, Clock::now() + 2s));

  // The ranks still come in, and what rank 1 receives is rank 0's.
  auto r0 = relay.client(0, 2), r1 = relay.client(1, 2);
  const auto [got0, got1] = gather_pair(*r0, *r1);
  CHECK(got0 == bytes_of("from rank 1"));
  CHECK(got1 == bytes_of("from rank 0"));
  r0.reset();
  r1.reset();
  REQUIRE(relay.finished());
  CHECK(relay.error().empty());
  close(old);
}

TEST_CASE("relay: a second connection claiming a rank is refused, and the rank's first connection keeps it") {
  Relay relay(2, 3000ms);
  auto r0 = relay.client(0, 2);
  // It holds the secret (a rank started twice, or a member gone wrong): proven, then refused.
  auto forged = relay.client(0, 2, 10000ms);  // the refusal comes at once; the wait is for a loaded machine
  CHECK_THROWS_WITH_AS(forged->all_gather(bytes_of("forged")), doctest::Contains("closed the connection"),
                       std::runtime_error);
  auto r1 = relay.client(1, 2);
  const auto [got0, got1] = gather_pair(*r0, *r1);
  CHECK(got0 == bytes_of("from rank 1"));
  CHECK(got1 == bytes_of("from rank 0"));  // never the forger's
  r0.reset();
  r1.reset();
  REQUIRE(relay.finished());
  CHECK(relay.error().empty());
}

TEST_CASE("relay: idle and slow connections hold up neither the accept loop nor the ranks") {
  Relay relay(2, 2000ms);
  // Connected first, silent: once, the relay waited on it before accepting anyone else.
  const int idle = connect_to("127.0.0.1", relay.port, Clock::now() + 2s);
  // Answering one byte at a time, slowly.
  std::atomic<bool> stop{false};
  std::thread slow([&] {
    const int fd = connect_to("127.0.0.1", relay.port, Clock::now() + 2s);
    uint8_t hello[40];
    (void)read_exactly(fd, hello, sizeof hello, Clock::now() + 2s);
    for (int i = 0; i < 80 && !stop; ++i) {
      const uint8_t b = 'L';
      if (!write_exactly(fd, &b, 1, Clock::now() + 1s)) break;
      std::this_thread::sleep_for(20ms);
    }
    close(fd);
  });
  // Their handshakes give up before the relay's would: waiting on a stranger, they would fail.
  std::unique_ptr<RelayClient> r0, r1;
  std::pair<std::vector<uint8_t>, std::vector<uint8_t>> got;
  CHECK_NOTHROW({
    r0 = relay.client(0, 2, 1500ms);
    r1 = relay.client(1, 2, 1500ms);
    got = gather_pair(*r0, *r1);
  });
  CHECK(got.first == bytes_of("from rank 1"));
  CHECK(got.second == bytes_of("from rank 0"));
  stop = true;
  slow.join();
  close(idle);
  r0.reset();
  r1.reset();
  REQUIRE(relay.finished());
  CHECK(relay.error().empty());
}

TEST_CASE("relay: a frame longer than the run's bound fails its rank at once, before anything is allocated for it") {
  for (const int64_t n : {int64_t(1) << 62, int64_t(1) << 40, int64_t(1) << 30, int64_t(kMaxFrameBytes) + 1, int64_t(-1)}) {
    CAPTURE(n);
    Relay relay(2, 3000ms);
    auto r0 = relay.client(0, 2);
    const int fd = raw_rank(relay.port, relay.secret(), 1, 2);
    send_i64(fd, n);
    const uint8_t ten[10] = {};
    (void)write_exactly(fd, ten, sizeof ten, Clock::now() + 1s);
    // At once: the relay never waits for (nor keeps) the bytes the header claims.
    REQUIRE(relay.finished(2000ms));
    CHECK(relay.error().find("rank 1 (127.0.0.1:") != std::string::npos);
    CHECK(relay.error().find("a frame of " + std::to_string(n) + " bytes") != std::string::npos);
    // The other rank's all-gather fails rather than waiting out its timeout.
    CHECK_THROWS_WITH_AS(r0->all_gather(bytes_of("x")), doctest::Contains("closed the connection"), std::runtime_error);
    close(fd);
  }
}

TEST_CASE("relay: a frame of the run's bound goes through, and a rank silent inside a frame is failed after the timeout") {
  Relay relay(2, 1000ms);
  auto r0 = relay.client(0, 2);
  const int fd = raw_rank(relay.port, relay.secret(), 1, 2);
  // Over it, this rank's own payload is refused before a byte is sent: the bound is wrong for the run.
  CHECK_THROWS_AS(r0->all_gather(std::vector<uint8_t>(kMaxFrameBytes + 1)), std::logic_error);
  std::vector<uint8_t> payload(kMaxFrameBytes, 0x5A);
  auto gathered = std::async(std::launch::async, [&] { return r0->all_gather(payload); });
  send_i64(fd, static_cast<int64_t>(payload.size()));
  REQUIRE(write_exactly(fd, payload.data(), payload.size(), Clock::now() + 2s));
  CHECK(gathered.get()[1] == payload);

  send_i64(fd, 100);
  const uint8_t some[10] = {};
  REQUIRE(write_exactly(fd, some, sizeof some, Clock::now() + 1s));
  REQUIRE(relay.finished(3000ms));
  CHECK(relay.error().find("rank 1 (127.0.0.1:") != std::string::npos);
  CHECK(relay.error().find("silent for 1 s in the middle of a frame") != std::string::npos);
  close(fd);
}

TEST_CASE("relay: a rank that sends frames ahead of the others' is not running all-gathers and is failed") {
  Relay relay(2, 3000ms);
  auto r0 = relay.client(0, 2);
  const int fd = raw_rank(relay.port, relay.secret(), 1, 2);
  for (int i = 0; i < 3; ++i) {  // the second needs rank 0's first, which never came
    send_i64(fd, 1);
    const uint8_t b = 1;
    (void)write_exactly(fd, &b, 1, Clock::now() + 1s);
  }
  REQUIRE(relay.finished(2000ms));
  CHECK(relay.error().find("rank 1 (127.0.0.1:") != std::string::npos);
  CHECK(relay.error().find("not an all-gather") != std::string::npos);
  close(fd);
}

TEST_CASE("relay: a rank's client refuses what no all-gather sends: another source, a length over the bound") {
  const JobSecret secret = secret_of(7);
  for (const std::vector<int64_t>& head : {std::vector<int64_t>{5, 1}, std::vector<int64_t>{-7, 1},
                                           std::vector<int64_t>{0, 1}, std::vector<int64_t>{1, int64_t(1) << 62}}) {
    const int listener = listen_on("127.0.0.1", 0, 4);
    // A relay that holds the secret and sends `head` down.
    std::thread fake([&] {
      pollfd p{listener, POLLIN, 0};
      if (poll(&p, 1, 3000) != 1) return;
      const int fd = accept(listener, nullptr, nullptr);
      try {
        authenticate_client(fd, secret, "relay", 2, 2000ms);
        (void)write_exactly(fd, head.data(), head.size() * 8, Clock::now() + 2s);
        uint8_t byte;
        (void)read_exactly(fd, &byte, 1, Clock::now() + 3s);  // until the client hangs up
      } catch (const std::exception&) {
      }
      close(fd);
    });
    {
      RelayClient client("127.0.0.1:" + std::to_string(bound_port(listener)), 0, 2, secret, kMaxFrameBytes, 2000ms);
      CHECK_THROWS_WITH_AS(client.all_gather(bytes_of("mine")), doctest::Contains("sent a frame"), PeerError);
    }
    fake.join();
    close(listener);
  }
}
