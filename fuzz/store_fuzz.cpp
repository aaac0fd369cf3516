// libFuzzer target: the job store's message decoding (real/store_protocol.hpp), what rank 0's store
// reads from every authenticated connection and each rank reads from the store. Bad bytes must end in
// ProtocolError; a crash, a sanitizer report, an allocation past the limits or any other exception is
// a finding. No LibTorch, no sockets.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>

#include "real/store_protocol.hpp"

using namespace locosim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  StoreLimits limits;
  limits.max_frame_bytes = 1 << 16;
  limits.max_key_bytes = 64;
  limits.max_keys_per_request = 16;
  if (size >= 4) {
    uint8_t prefix[4] = {data[0], data[1], data[2], data[3]};
    try {
      if (frame_length(prefix, limits) > limits.max_frame_bytes) std::abort();
    } catch (const ProtocolError&) {
    }
  }
  try {
    StoreRequest r = decode_request(data, size, limits);
    if (r.keys.size() > limits.max_keys_per_request) std::abort();
    for (const auto& k : r.keys) {
      if (k.empty() || k.size() > limits.max_key_bytes) std::abort();
    }
    // What decodes must encode back to the same bytes: nothing was read past the message.
    if (encode_request(r) != std::vector<uint8_t>(data, data + size)) std::abort();
  } catch (const ProtocolError&) {
  }
  try {
    StoreReply r = decode_reply(data, size, limits);
    (void)r;
  } catch (const ProtocolError&) {
  }
  return 0;
}
