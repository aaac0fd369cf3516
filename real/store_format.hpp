// How the real backend's values travel in the c10d store: plain-data rows and integers as raw bytes,
// and the keys of the group's membership protocol (Gloo's own keys live under "epoch-<n>/").
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace locosim {

template <class T>
std::vector<uint8_t> to_bytes(const std::vector<T>& values) {
  static_assert(std::is_trivially_copyable_v<T>, "only plain data travels as bytes");
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <class T>
std::vector<T> from_bytes(const std::vector<uint8_t>& bytes) {
  static_assert(std::is_trivially_copyable_v<T>, "only plain data travels as bytes");
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

// Epoch `epoch`'s keys ("group/<epoch>/<what>") and a joiner's ("join/<rank>/<what>").
inline std::string group_key(int epoch, const std::string& what) {
  return "group/" + std::to_string(epoch) + "/" + what;
}
inline std::string join_key(const std::string& what, int rank) { return "join/" + std::to_string(rank) + "/" + what; }

// Times cross the store as whole microseconds.
inline int64_t micros(double s) { return static_cast<int64_t>(s * 1e6); }
inline double seconds(int64_t us) { return static_cast<double>(us) / 1e6; }

}  // namespace locosim
