// Who may talk to a job's servers (its store and its relay): only a process that holds the job's
// secret. Every connection opens with a mutual HMAC-SHA256 challenge before either side reads anything
// else from it, and every read that follows is bounded in size and time. No LibTorch here.
//
// The handshake (both sides write, then read; fixed sizes, so nothing is allocated for a stranger):
//   server -> client  [8 magic "LOCOSIM1"][32 server nonce]
//   client -> server  [8 magic][32 client nonce][int64 claimed rank][32 HMAC(key, "client" service
//                      server_nonce client_nonce rank world_size)]
//   server -> client  [32 HMAC(key, "server" service server_nonce client_nonce rank world_size)]
// The server checks the client's MAC and that its claimed rank is one of the job's (0 .. world_size-1);
// the client checks the server's, so a rank never talks to an impostor either. Nonces are fresh per
// connection: a recorded handshake cannot be replayed.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace locosim {

// The job's secret: 32 random bytes, never printed. A launcher makes one for its ranks; elsewhere the
// user gives it (LOCOSIM_JOB_SECRET, 64 hex digits, or LOCOSIM_JOB_SECRET_FILE naming a file that
// holds them and that only its owner may read).
struct JobSecret {
  std::array<uint8_t, 32> key{};

  static JobSecret generate();  // from the kernel's random source; throws std::runtime_error
  // Throws std::invalid_argument naming the variable when it is missing or malformed (the CLI's
  // exit 2), with a hint on how to make one.
  static JobSecret from_environment();
  std::string hex() const;  // for a child's environment only
};

// The environment variable a launcher sets for its children.
constexpr const char* kJobSecretVariable = "LOCOSIM_JOB_SECRET";
constexpr const char* kJobSecretFileVariable = "LOCOSIM_JOB_SECRET_FILE";

// A peer that failed the handshake or broke the protocol: the message names it (its address) and what
// it did. Servers drop such a connection; a rank that meets one fails with the message.
class PeerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "127.0.0.1:53412": the peer of a connected socket, for messages.
std::string peer_name(int fd);

// Server side of the handshake on a connected socket: returns the rank the peer proved it may claim.
// `service` names the server ("store", "relay"): a secret's MAC for one is refused by the other.
// Throws PeerError when the peer is silent for `timeout`, closes, or fails the check.
int authenticate_client(int fd, const JobSecret& secret, const std::string& service, int world_size,
                        std::chrono::milliseconds timeout);

// Client side: proves this process holds the secret and claims `rank`; checks the server's proof.
// Throws PeerError when the server does not answer within `timeout` or fails its check.
void authenticate_to_server(int fd, const JobSecret& secret, const std::string& service, int rank, int world_size,
                            std::chrono::milliseconds timeout);

// Whole-buffer reads and writes with a deadline (poll before each piece; MSG_NOSIGNAL: a closed peer
// is an error, not SIGPIPE). False on timeout, end of stream or error; errno says which (ETIMEDOUT for
// the deadline, 0 for the end of the stream).
bool read_exactly(int fd, void* data, size_t n, std::chrono::steady_clock::time_point deadline);
bool write_exactly(int fd, const void* data, size_t n, std::chrono::steady_clock::time_point deadline);

// A listening TCP socket on `address` ("127.0.0.1", "0.0.0.0", a host name; IPv4) and `port` (0: a free
// one), close-on-exec (a launcher's children never hold it), with room in its backlog for `backlog`
// pending connections. Throws std::runtime_error naming the address on failure.
int listen_on(const std::string& address, uint16_t port, int backlog);
uint16_t bound_port(int listener);

// A connection to host:port, close-on-exec, TCP_NODELAY; retried until `deadline` (the server may start
// after this process). Throws std::runtime_error naming the address when the deadline passes.
int connect_to(const std::string& host, uint16_t port, std::chrono::steady_clock::time_point deadline);

}  // namespace locosim
