// The relay's frames as they come off a socket: whole frames out of a stream of bytes, each header
// checked before a byte is kept for its payload. Pure and torch-free (fuzz/relay_fuzz.cpp drives it).
//
//   uplink   (a rank to the relay)   [int64 n][n bytes]                  the source is the connection's rank
//   downlink (the relay to a rank)   [int64 source][int64 n][n bytes]    source in 0 .. K-1, not the reader's
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace locosim {

struct RelayFrame {
  int source = 0;
  std::vector<uint8_t> bytes;
};

// A header no honest peer sends. The message says what was wrong (not who sent it: the caller knows).
class FrameError : public std::runtime_error {
 public:
  enum class Kind { negative_length, over_bound, bad_source };
  FrameError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

class FrameReader {
 public:
  // Frames from rank `source`, each at most `max_frame_bytes`.
  static FrameReader uplink(int source, uint64_t max_frame_bytes);
  // Frames for rank `reader_rank` of `world_size`, from any other rank, each at most `max_frame_bytes`.
  static FrameReader downlink(int world_size, int reader_rank, uint64_t max_frame_bytes);

  // Takes the next `n` bytes of the stream; whole frames wait for next(). Throws FrameError at the first
  // bad header, before anything is kept for its payload; the reader is then broken and throws it again
  // (the frames whole before it still wait for next()).
  // A payload's buffer grows with the bytes that arrive, never with the length its header claims.
  void feed(const uint8_t* data, size_t n);

  bool has_frame() const { return !ready_.empty(); }
  RelayFrame next();  // REQUIRES: has_frame()
  // Some bytes of a frame have arrived, not all of it (a peer silent now is late, not idle).
  bool mid_frame() const { return head_filled_ > 0; }

 private:
  FrameReader(bool with_source, int source, int world_size, uint64_t max_frame_bytes)
      : with_source_(with_source), source_(source), world_size_(world_size), max_frame_bytes_(max_frame_bytes) {}
  size_t head_size() const { return with_source_ ? 2 * sizeof(int64_t) : sizeof(int64_t); }
  void start_frame();  // the header is whole: checks it

  bool with_source_;
  int source_;      // uplink: the connection's rank; downlink: the reader's own
  int world_size_;  // downlink only
  uint64_t max_frame_bytes_;
  uint8_t head_[2 * sizeof(int64_t)] = {};
  size_t head_filled_ = 0;  // 0 between frames; head_size() once the header is whole
  uint64_t payload_left_ = 0;
  RelayFrame current_;
  std::deque<RelayFrame> ready_;
  std::string broken_;  // the error that broke the reader
  FrameError::Kind broken_kind_ = FrameError::Kind::negative_length;
};

}  // namespace locosim
