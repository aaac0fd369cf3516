// StoreClient: framed requests and replies over one authenticated connection (see store_client.hpp).
#include "real/store_client.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace locosim {

using Clock = std::chrono::steady_clock;

StoreClient::StoreClient(const std::string& host, uint16_t port, const JobSecret& secret, int rank, int world_size,
                         std::chrono::milliseconds timeout, const StoreLimits& limits)
    : address_(host + ":" + std::to_string(port)), limits_(limits) {
  fd_ = connect_to(host, port, Clock::now() + timeout);
  try {
    authenticate_to_server(fd_, secret, "store", rank, world_size, timeout);
  } catch (...) {
    close(fd_);
    throw;
  }
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) close(fd_);
}

StoreReply StoreClient::call(const StoreRequest& request, std::chrono::milliseconds server_wait,
                             std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string where = "the job's store at " + address_;
  if (!broken_.empty()) throw std::runtime_error(where + " is unreachable: " + broken_);
  const std::vector<uint8_t> bytes = framed(encode_request(request));
  if (bytes.size() - 4 > limits_.max_frame_bytes) {
    throw std::runtime_error("a value of " + std::to_string(request.value.size()) + " bytes for " + where +
                             ": larger than the job allows (" + std::to_string(limits_.max_frame_bytes) + ")");
  }
  const auto deadline = Clock::now() + server_wait + timeout;
  uint8_t prefix[4];
  std::vector<uint8_t> frame;
  if (!write_exactly(fd_, bytes.data(), bytes.size(), deadline) || !read_exactly(fd_, prefix, sizeof prefix, deadline)) {
    broken_ = errno == ETIMEDOUT ? "no answer in time" : errno ? std::strerror(errno) : "it closed the connection";
    throw std::runtime_error(where + " is unreachable: " + broken_);
  }
  try {
    frame.resize(frame_length(prefix, limits_));
  } catch (const ProtocolError& e) {
    broken_ = e.what();
    throw std::runtime_error(where + " sent " + broken_);
  }
  if (!read_exactly(fd_, frame.data(), frame.size(), deadline)) {
    broken_ = "it stopped mid-reply";
    throw std::runtime_error(where + " is unreachable: " + broken_);
  }
  StoreReply reply = decode_reply(frame.data(), frame.size(), limits_);
  if (reply.status == StoreStatus::refused) throw std::runtime_error(where + " refused a request: " + reply.message);
  return reply;
}

}  // namespace locosim
