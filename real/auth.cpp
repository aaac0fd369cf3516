// The job's secret and the mutual HMAC handshake of its servers (see auth.hpp); sockets with deadlines.
#include "real/auth.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace locosim {
namespace {

using Clock = std::chrono::steady_clock;
using Digest = std::array<uint8_t, 32>;
constexpr char kMagic[8] = {'L', 'O', 'C', 'O', 'S', 'I', 'M', '1'};

const char* kSecretHint =
    "every rank of a job (and its relay) needs the same secret: make one with "
    "`head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > job.secret; chmod 600 job.secret` on a file system "
    "all hosts see, then export LOCOSIM_JOB_SECRET_FILE=$PWD/job.secret (--spawn makes its own)";

JobSecret parse_hex(const std::string& text, const std::string& where) {
  std::string hex;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) hex += c;
  }
  JobSecret s;
  if (hex.size() != 2 * s.key.size() || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    throw std::invalid_argument(where + ": expected 64 hex digits (32 bytes); " + kSecretHint);
  }
  for (size_t i = 0; i < s.key.size(); ++i) s.key[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return s;
}

Digest mac(const JobSecret& secret, const std::string& side, const std::string& service, const uint8_t* server_nonce,
           const uint8_t* client_nonce, int64_t rank, int64_t world_size) {
  std::string message = side + '\0' + service + '\0';
  message.append(reinterpret_cast<const char*>(server_nonce), 32);
  message.append(reinterpret_cast<const char*>(client_nonce), 32);
  message.append(reinterpret_cast<const char*>(&rank), sizeof rank);
  message.append(reinterpret_cast<const char*>(&world_size), sizeof world_size);
  Digest out{};
  unsigned int n = 0;
  HMAC(EVP_sha256(), secret.key.data(), static_cast<int>(secret.key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(), &n);
  return out;
}

void random_bytes(uint8_t* out, size_t n) {
  if (RAND_bytes(out, static_cast<int>(n)) != 1) throw std::runtime_error("cannot read random bytes for the job's secret");
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// Waits until fd is ready for `events` or the deadline passes (errno = ETIMEDOUT).
bool wait_ready(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int ready = poll(&p, 1, remaining_ms(deadline));
    if (ready > 0) return true;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) errno = ETIMEDOUT;
    return false;
  }
}

std::string what_went_wrong(const std::string& peer, const std::string& doing) {
  if (errno == ETIMEDOUT) return peer + " was silent past the deadline while " + doing;
  if (errno == 0) return peer + " closed the connection while " + doing;
  return peer + ": " + std::strerror(errno) + " while " + doing;
}

}  // namespace

JobSecret JobSecret::generate() {
  JobSecret s;
  random_bytes(s.key.data(), s.key.size());
  return s;
}

JobSecret JobSecret::from_environment() {
  if (const char* hex = std::getenv(kJobSecretVariable); hex && *hex) return parse_hex(hex, kJobSecretVariable);
  const char* file = std::getenv(kJobSecretFileVariable);
  if (!file || !*file) {
    throw std::invalid_argument(std::string("no job secret: neither ") + kJobSecretVariable + " nor " +
                                kJobSecretFileVariable + " is set; " + kSecretHint);
  }
  const std::string where = std::string(kJobSecretFileVariable) + "=" + file;
  struct stat st {};
  if (stat(file, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw std::invalid_argument(where + ": not a readable regular file");
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    throw std::invalid_argument(where + ": others may read it (mode " +
                                std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                                std::to_string(st.st_mode & 7) + "); chmod 600 it");
  }
  if (st.st_size > 1024) throw std::invalid_argument(where + ": expected 64 hex digits, the file is larger");
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw std::invalid_argument(where + ": cannot be read");
  return parse_hex(text.str(), where);
}

std::string JobSecret::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : key) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::string peer_name(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sin_family != AF_INET) {
    return "a peer";
  }
  char host[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr.sin_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(addr.sin_port));
}

bool read_exactly(int fd, void* data, size_t n, Clock::time_point deadline) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    if (!wait_ready(fd, POLLIN, deadline)) return false;
    const ssize_t k = recv(fd, p, n, MSG_DONTWAIT);
    if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (k == 0) errno = 0;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool write_exactly(int fd, const void* data, size_t n, Clock::time_point deadline) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    if (!wait_ready(fd, POLLOUT, deadline)) return false;
    const ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

int authenticate_client(int fd, const JobSecret& secret, const std::string& service, int world_size,
                        std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string peer = peer_name(fd);
  uint8_t hello[8 + 32];
  std::memcpy(hello, kMagic, 8);
  random_bytes(hello + 8, 32);
  if (!write_exactly(fd, hello, sizeof hello, deadline)) throw PeerError(what_went_wrong(peer, "greeted"));
  // Fixed size: nothing a stranger sends is allocated or interpreted before the MAC is checked.
  uint8_t answer[8 + 32 + 8 + 32];
  if (!read_exactly(fd, answer, sizeof answer, deadline)) {
    throw PeerError(what_went_wrong(peer, "proving it holds the job's secret"));
  }
  int64_t rank = 0;
  std::memcpy(&rank, answer + 40, sizeof rank);
  const Digest expected = mac(secret, "client", service, hello + 8, answer + 8, rank, world_size);
  if (std::memcmp(answer, kMagic, 8) != 0 || CRYPTO_memcmp(expected.data(), answer + 48, expected.size()) != 0) {
    throw PeerError(peer + " does not hold this job's " + service + " secret: refused");
  }
  if (rank < 0 || rank >= world_size) {
    throw PeerError(peer + " claims rank " + std::to_string(rank) + " of a job of " + std::to_string(world_size));
  }
  const Digest proof = mac(secret, "server", service, hello + 8, answer + 8, rank, world_size);
  if (!write_exactly(fd, proof.data(), proof.size(), deadline)) throw PeerError(what_went_wrong(peer, "answered"));
  return static_cast<int>(rank);
}

void authenticate_to_server(int fd, const JobSecret& secret, const std::string& service, int rank, int world_size,
                            std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string peer = "the " + service + " at " + peer_name(fd);
  uint8_t hello[8 + 32];
  if (!read_exactly(fd, hello, sizeof hello, deadline)) throw PeerError(what_went_wrong(peer, "greeting"));
  if (std::memcmp(hello, kMagic, 8) != 0) throw PeerError(peer + " is not a locosim " + service);
  uint8_t answer[8 + 32 + 8 + 32];
  std::memcpy(answer, kMagic, 8);
  random_bytes(answer + 8, 32);
  const int64_t claimed = rank;
  std::memcpy(answer + 40, &claimed, sizeof claimed);
  const Digest proof = mac(secret, "client", service, hello + 8, answer + 8, claimed, world_size);
  std::memcpy(answer + 48, proof.data(), proof.size());
  if (!write_exactly(fd, answer, sizeof answer, deadline)) throw PeerError(what_went_wrong(peer, "greeted"));
  Digest reply{};
  if (!read_exactly(fd, reply.data(), reply.size(), deadline)) {
    throw PeerError(what_went_wrong(peer, "proving it holds the job's secret (a different secret refuses silently)"));
  }
  const Digest expected = mac(secret, "server", service, hello + 8, answer + 8, claimed, world_size);
  if (CRYPTO_memcmp(expected.data(), reply.data(), reply.size()) != 0) {
    throw PeerError(peer + " does not hold this job's secret: refused");
  }
}

int listen_on(const std::string& address, uint16_t port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string where = address + ":" + std::to_string(port);
  if (getaddrinfo(address.c_str(), nullptr, &hints, &found) != 0 || !found) {
    throw std::runtime_error("cannot listen on " + where + ": the address does not resolve");
  }
  sockaddr_in addr = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  freeaddrinfo(found);
  addr.sin_port = htons(port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("cannot listen on " + where + ": " + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, backlog) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    throw std::runtime_error("cannot listen on " + where + ": " + why);
  }
  return fd;
}

uint16_t bound_port(int listener) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

int connect_to(const std::string& host, uint16_t port, Clock::time_point deadline) {
  const std::string where = host + ":" + std::to_string(port);
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) == 0 && found) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      const bool ok = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0;
      freeaddrinfo(found);
      if (ok) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return fd;
      }
      if (fd >= 0) close(fd);
    }
    if (Clock::now() >= deadline) throw std::runtime_error("cannot connect to " + where);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace locosim
