// libFuzzer target over the parsers of what the real backend's peers send: the relay's frames
// (FrameReader, both directions, the stream cut into pieces as the input says) and the parameter
// server's messages (parse_tensor_heads, parse_push_order). No LibTorch, no sockets.
// Bad input must end in FrameError or std::invalid_argument; a frame or tensor that breaks the bounds
// it was read under, or two cuts of one stream that read differently, is a finding (abort).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include "real/relay_frames.hpp"
#include "real/server_messages.hpp"

namespace {

constexpr uint64_t kMaxFrameBytes = 4096;
constexpr int kWorldSize = 4, kReaderRank = 2;

void check(bool ok) {
  if (!ok) std::abort();
}

// The frames read from `stream` fed in pieces of `piece` bytes (0: in one go), and whether it broke.
struct Reading {
  std::vector<locosim::RelayFrame> frames;
  std::optional<locosim::FrameError::Kind> error;
};

Reading read_frames(bool downlink, const uint8_t* stream, size_t size, size_t piece) {
  locosim::FrameReader in = downlink ? locosim::FrameReader::downlink(kWorldSize, kReaderRank, kMaxFrameBytes)
                                     : locosim::FrameReader::uplink(1, kMaxFrameBytes);
  Reading r;
  try {
    size_t at = 0;
    do {
      const size_t n = piece == 0 ? size : std::min(piece, size - at);
      in.feed(stream + at, n);
      while (in.has_frame()) r.frames.push_back(in.next());
      at += n;
    } while (at < size);
  } catch (const locosim::FrameError& e) {
    r.error = e.kind();
    while (in.has_frame()) r.frames.push_back(in.next());  // whole before the bad header
  }
  size_t bytes = 0;
  for (const auto& f : r.frames) {
    check(f.bytes.size() <= kMaxFrameBytes);
    check(downlink ? f.source >= 0 && f.source < kWorldSize && f.source != kReaderRank : f.source == 1);
    bytes += f.bytes.size() + (downlink ? 16 : 8);
  }
  check(bytes <= size);
  return r;
}

void fuzz_frames(bool downlink, const uint8_t* data, size_t size, size_t piece) {
  const Reading whole = read_frames(downlink, data, size, 0);
  const Reading cut = read_frames(downlink, data, size, piece);
  check(whole.error == cut.error);
  check(whole.frames.size() == cut.frames.size());
  for (size_t i = 0; i < whole.frames.size(); ++i) {
    check(whole.frames[i].source == cut.frames[i].source && whole.frames[i].bytes == cut.frames[i].bytes);
  }
}

void fuzz_server_message(const uint8_t* data, size_t size) {
  const std::map<int64_t, locosim::Dtype> dtypes = {{6, {4, "Float"}}, {7, {8, "Double"}}, {5, {2, "Half"}}};
  const locosim::MessageBounds push =  // a push: exactly this layout
      locosim::MessageBounds::exactly({{6, {4, 3}}, {5, {7}}, {7, {2}}}, dtypes);
  locosim::MessageBounds reply;  // a reply: bounded, any layout
  reply.dtypes = dtypes;
  reply.max_tensors = 4;
  reply.max_dims = 3;
  reply.max_total_bytes = 512;
  const locosim::MessageBounds* const both[] = {&push, &reply};
  for (const locosim::MessageBounds* bounds : both) {
    try {
      size_t end = 0;
      uint64_t total = 0;
      for (const auto& h : locosim::parse_tensor_heads(data, size, *bounds)) {
        check(h.offset >= end && h.offset <= size && h.bytes <= size - h.offset);
        check(h.shape.sizes.size() <= bounds->max_dims && bounds->dtypes.count(h.shape.dtype) == 1);
        uint64_t numel = 1;
        for (int64_t s : h.shape.sizes) numel *= static_cast<uint64_t>(s);
        check(numel * bounds->dtypes.at(h.shape.dtype).element_bytes == h.bytes);
        end = h.offset + h.bytes;
        total += h.bytes;
      }
      check(end == size && total <= bounds->max_total_bytes);
    } catch (const std::invalid_argument&) {
    }
  }
  try {
    const auto order = locosim::parse_push_order(std::vector<uint8_t>(data, data + std::min<size_t>(size, 16)), kWorldSize);
    check(order.rank >= 0 && order.rank < kWorldSize && order.push >= 0);
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

// The first byte picks the parser; the second how the relay's stream is cut.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0] % 3;
  const size_t piece = data[1] % 32 + 1;
  data += 2;
  size -= 2;
  if (mode == 2) {
    fuzz_server_message(data, size);
  } else {
    fuzz_frames(mode == 1, data, size, piece);
  }
  return 0;
}
