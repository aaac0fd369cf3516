// One authenticated connection to the job's store (real/store_server.hpp): a request, then its reply.
// No LibTorch here; AuthStore (auth_store.hpp) puts c10d's Store interface on it.
#pragma once
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>

#include "real/auth.hpp"
#include "real/store_protocol.hpp"

namespace locosim {

// A get or wait whose keys did not appear within its timeout: the store is there, the keys are not
// (yet). Every other failure of a store call means the store itself is gone or refused.
class StoreTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StoreClient {
 public:
  // Connects to host:port (retrying until `timeout`: rank 0 may start its server after this rank) as
  // `rank` of `world_size`. Throws PeerError or std::runtime_error naming the address.
  StoreClient(const std::string& host, uint16_t port, const JobSecret& secret, int rank, int world_size,
              std::chrono::milliseconds timeout, const StoreLimits& limits);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  // Sends `request` and returns the reply (ok or timeout). The server may hold a get or wait for
  // `server_wait`; the reply then has `timeout` more to come. Throws std::runtime_error when the store
  // is unreachable or refuses the request; after a failure mid-message every later call throws too.
  StoreReply call(const StoreRequest& request, std::chrono::milliseconds server_wait,
                  std::chrono::milliseconds timeout);
  const std::string& address() const { return address_; }

 private:
  std::mutex mutex_;  // one request at a time on the connection
  int fd_ = -1;
  std::string address_;
  StoreLimits limits_;
  std::string broken_;  // why the connection is out of step for good ("": it is not)
};

}  // namespace locosim
