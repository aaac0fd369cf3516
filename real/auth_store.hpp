// A rank's connection to the job's store (real/store_server.hpp) as the c10d::Store that Gloo's
// rendezvous and the real backend's protocols use: StoreClient (store_client.hpp) underneath.
#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

#include "real/store_client.hpp"

namespace locosim {

class AuthStore : public c10d::Store {
 public:
  AuthStore(const std::string& host, uint16_t port, const JobSecret& secret, int rank, int world_size,
            std::chrono::milliseconds timeout, const StoreLimits& limits)
      : c10d::Store(timeout),
        client_(host, port, secret, rank, world_size, timeout, limits),
        login_{host, port, secret, rank, world_size, limits} {}

  // Another connection to the same store with the same credentials: newer LibTorch's Store asks its
  // subclasses for such a thread-safe copy (a pure virtual there). Declared without `override` so
  // that it builds where the base has no clone (LibTorch 1.13).
  c10::intrusive_ptr<c10d::Store> clone();

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  std::vector<uint8_t> get(const std::string& key) override;  // waits for the key up to the timeout
  int64_t add(const std::string& key, int64_t amount) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  StoreReply call(const StoreRequest& r, std::chrono::milliseconds server_wait = std::chrono::milliseconds(0)) {
    return client_.call(r, server_wait, timeout_);
  }

  struct Login {
    std::string host;
    uint16_t port;
    JobSecret secret;
    int rank, world_size;
    StoreLimits limits;
  };
  StoreClient client_;
  Login login_;
};

}  // namespace locosim
