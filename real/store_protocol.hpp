// The messages of the job's store (real/store_server.hpp) on the wire, and their bounded decoding.
// No LibTorch and no sockets here: a fuzzer drives decode_request and decode_reply directly.
//
// A message is a frame [uint32 length][length bytes], length <= StoreLimits::max_frame_bytes, read
// whole before it is decoded. A request's bytes: [uint8 op][uint32 count] then `count` fields, each
// [uint32 size][size bytes]. A reply's: [uint8 status][uint32 count] then its fields. Integers are
// little-endian, as the x86-64 and aarch64 hosts that run jobs write them.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace locosim {

enum class StoreOp : uint8_t {
  set = 1,          // fields: key, value
  get = 2,          // key, timeout_ms (int64): waits for the key; replies its value
  add = 3,          // key, amount (int64): replies the new value (a missing key counts from 0)
  compare_set = 4,  // key, expected, desired: replies the value now stored
  check = 5,        // key...: replies [1] when every key is there, else [0]
  erase = 6,        // key: replies [1] if it was there
  count = 7,        // no fields: replies the number of keys (int64)
  wait = 8,         // timeout_ms (int64), key...: waits for every key
};

enum class StoreStatus : uint8_t { ok = 0, timeout = 1, refused = 2 };

// What the job can need, set by its rank 0 from the model's size and the world size. Every length read
// from a peer is checked against these before anything is allocated for it.
struct StoreLimits {
  uint32_t max_frame_bytes = 64u << 20;   // one message: a value plus its key and header
  size_t max_key_bytes = 1024;            // locosim's keys are short ("group/3/ready/12")
  size_t max_keys_per_request = 4096;     // keys in one check or wait
  size_t max_keys_held = 1u << 22;        // keys held at once (metric rows arrive in chunks all run long)
  uint64_t max_total_bytes = 1ull << 30;  // everything the store holds at once
};

// A request or reply that breaks the protocol or the limits: the message says which field and bound.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StoreRequest {
  StoreOp op = StoreOp::count;
  std::vector<std::string> keys;
  std::vector<uint8_t> value;     // set: the value; compare_set: the desired value
  std::vector<uint8_t> expected;  // compare_set
  int64_t number = 0;             // add: the amount; get and wait: the timeout in ms
};

struct StoreReply {
  StoreStatus status = StoreStatus::ok;
  std::vector<uint8_t> value;  // get, compare_set; add and count: an int64; check and erase: one byte
  std::string message;         // refused: why
};

std::vector<uint8_t> encode_request(const StoreRequest& request);
std::vector<uint8_t> encode_reply(const StoreReply& reply);

// Decode a frame's bytes (without its length prefix). Throw ProtocolError for an unknown op or status,
// a field count or size past the bytes or the limits, a key that is empty or too long, trailing bytes.
StoreRequest decode_request(const uint8_t* data, size_t size, const StoreLimits& limits);
StoreReply decode_reply(const uint8_t* data, size_t size, const StoreLimits& limits);

// `body` behind its length prefix: one buffer, sent with one write.
std::vector<uint8_t> framed(const std::vector<uint8_t>& body);

// The frame's length prefix, checked against the limit (ProtocolError naming both).
uint32_t frame_length(const uint8_t (&prefix)[4], const StoreLimits& limits);

int64_t int64_from(const std::vector<uint8_t>& bytes);  // ProtocolError unless exactly 8 bytes
std::vector<uint8_t> int64_bytes(int64_t value);

}  // namespace locosim
