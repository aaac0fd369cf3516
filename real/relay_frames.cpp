// Whole relay frames out of a stream of bytes, each header checked first (see relay_frames.hpp).
#include "real/relay_frames.hpp"

#include <algorithm>
#include <cstring>

namespace locosim {

FrameReader FrameReader::uplink(int source, uint64_t max_frame_bytes) {
  return FrameReader(false, source, 0, max_frame_bytes);
}

FrameReader FrameReader::downlink(int world_size, int reader_rank, uint64_t max_frame_bytes) {
  return FrameReader(true, reader_rank, world_size, max_frame_bytes);
}

void FrameReader::start_frame() {
  int64_t source = source_, n = 0;
  if (with_source_) {
    std::memcpy(&source, head_, sizeof source);
    std::memcpy(&n, head_ + sizeof source, sizeof n);
  } else {
    std::memcpy(&n, head_, sizeof n);
  }
  if (with_source_ && (source < 0 || source >= world_size_ || source == source_)) {
    broken_kind_ = FrameError::Kind::bad_source;
    broken_ = "a frame from rank " + std::to_string(source) + ", not another of the job's " +
              std::to_string(world_size_) + " ranks";
  } else if (n < 0) {
    broken_kind_ = FrameError::Kind::negative_length;
    broken_ = "a frame of " + std::to_string(n) + " bytes";
  } else if (static_cast<uint64_t>(n) > max_frame_bytes_) {
    broken_kind_ = FrameError::Kind::over_bound;
    broken_ = "a frame of " + std::to_string(n) + " bytes, over the run's bound of " +
              std::to_string(max_frame_bytes_) + " bytes (the largest payload its policy sends)";
  }
  if (!broken_.empty()) throw FrameError(broken_kind_, broken_);
  current_.source = static_cast<int>(source);
  current_.bytes.clear();
  payload_left_ = static_cast<uint64_t>(n);
}

void FrameReader::feed(const uint8_t* data, size_t n) {
  if (!broken_.empty()) throw FrameError(broken_kind_, broken_);
  while (n > 0) {
    if (head_filled_ < head_size()) {
      const size_t take = std::min(n, head_size() - head_filled_);
      std::memcpy(head_ + head_filled_, data, take);
      head_filled_ += take;
      data += take;
      n -= take;
      if (head_filled_ < head_size()) return;
      start_frame();
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, payload_left_));
    current_.bytes.insert(current_.bytes.end(), data, data + take);
    data += take;
    n -= take;
    payload_left_ -= take;
    if (payload_left_ > 0) return;
    ready_.push_back(std::move(current_));
    current_ = RelayFrame{};
    head_filled_ = 0;
  }
}

RelayFrame FrameReader::next() {
  RelayFrame f = std::move(ready_.front());
  ready_.pop_front();
  return f;
}

}  // namespace locosim
