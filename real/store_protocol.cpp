// Encoding and bounded decoding of the store's messages (see store_protocol.hpp).
#include "real/store_protocol.hpp"

#include <cstring>

namespace locosim {
namespace {

// Resized, then copied into: GCC 12 warns (-Wstringop-overflow, a false positive) at an insert of the
// value's four bytes.
void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

void put_field(std::vector<uint8_t>& out, const void* data, size_t size) {
  put_u32(out, static_cast<uint32_t>(size));
  const auto* p = static_cast<const uint8_t*>(data);
  out.insert(out.end(), p, p + size);
}

std::vector<uint8_t> message(uint8_t head, const std::vector<std::vector<uint8_t>>& fields) {
  std::vector<uint8_t> out{head};
  put_u32(out, static_cast<uint32_t>(fields.size()));
  for (const auto& f : fields) put_field(out, f.data(), f.size());
  return out;
}

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// Reads [uint8 head][uint32 count][fields], each field's size checked against what is left.
struct Reader {
  const uint8_t* data;
  size_t size;
  size_t at = 0;

  uint32_t u32(const char* what) {
    if (size - at < 4) throw ProtocolError(std::string("a message ends inside its ") + what);
    uint32_t v = 0;
    std::memcpy(&v, data + at, 4);
    at += 4;
    return v;
  }
  std::vector<std::vector<uint8_t>> fields(const StoreLimits& limits) {
    if (size < 1) throw ProtocolError("an empty message");
    at = 1;
    const uint32_t count = u32("field count");
    // Every field takes at least its 4-byte size: a count past that is a lie, refused before reserving.
    if (count > limits.max_keys_per_request + 3 || count > (size - at) / 4) {
      throw ProtocolError("a message claims " + std::to_string(count) + " fields in " + std::to_string(size) +
                          " bytes (at most " + std::to_string(limits.max_keys_per_request + 3) + ")");
    }
    std::vector<std::vector<uint8_t>> out;
    out.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t n = u32("field size");
      if (n > size - at) {
        throw ProtocolError("field " + std::to_string(i) + " claims " + std::to_string(n) + " bytes, " +
                            std::to_string(size - at) + " are left");
      }
      out.emplace_back(data + at, data + at + n);
      at += n;
    }
    if (at != size) throw ProtocolError(std::to_string(size - at) + " bytes after the last field");
    return out;
  }
};

std::string key_from(const std::vector<uint8_t>& field, const StoreLimits& limits) {
  if (field.empty()) throw ProtocolError("an empty key");
  if (field.size() > limits.max_key_bytes) {
    throw ProtocolError("a key of " + std::to_string(field.size()) + " bytes (at most " +
                        std::to_string(limits.max_key_bytes) + ")");
  }
  return {field.begin(), field.end()};
}

void expect_fields(const std::vector<std::vector<uint8_t>>& f, size_t n, const char* op) {
  if (f.size() != n) {
    throw ProtocolError(std::string(op) + " takes " + std::to_string(n) + " fields, got " + std::to_string(f.size()));
  }
}

}  // namespace

std::vector<uint8_t> int64_bytes(int64_t value) {
  std::vector<uint8_t> out(sizeof value);
  std::memcpy(out.data(), &value, sizeof value);
  return out;
}

int64_t int64_from(const std::vector<uint8_t>& bytes) {
  if (bytes.size() != sizeof(int64_t)) {
    throw ProtocolError("an integer field of " + std::to_string(bytes.size()) + " bytes (expected 8)");
  }
  int64_t v = 0;
  std::memcpy(&v, bytes.data(), sizeof v);
  return v;
}

std::vector<uint8_t> encode_request(const StoreRequest& r) {
  std::vector<std::vector<uint8_t>> fields;
  switch (r.op) {
    case StoreOp::set: fields = {bytes_of(r.keys.at(0)), r.value}; break;
    case StoreOp::get: fields = {bytes_of(r.keys.at(0)), int64_bytes(r.number)}; break;
    case StoreOp::add: fields = {bytes_of(r.keys.at(0)), int64_bytes(r.number)}; break;
    case StoreOp::compare_set: fields = {bytes_of(r.keys.at(0)), r.expected, r.value}; break;
    case StoreOp::check:
      for (const auto& k : r.keys) fields.push_back(bytes_of(k));
      break;
    case StoreOp::erase: fields = {bytes_of(r.keys.at(0))}; break;
    case StoreOp::count: break;
    case StoreOp::wait:
      fields.push_back(int64_bytes(r.number));
      for (const auto& k : r.keys) fields.push_back(bytes_of(k));
      break;
  }
  return message(static_cast<uint8_t>(r.op), fields);
}

std::vector<uint8_t> encode_reply(const StoreReply& r) {
  if (r.status == StoreStatus::refused) return message(static_cast<uint8_t>(r.status), {bytes_of(r.message)});
  return message(static_cast<uint8_t>(r.status), {r.value});
}

StoreRequest decode_request(const uint8_t* data, size_t size, const StoreLimits& limits) {
  Reader reader{data, size};
  auto f = reader.fields(limits);
  StoreRequest r;
  const uint8_t op = data[0];
  switch (op) {
    case static_cast<uint8_t>(StoreOp::set):
      expect_fields(f, 2, "set");
      r.keys = {key_from(f[0], limits)};
      r.value = std::move(f[1]);
      break;
    case static_cast<uint8_t>(StoreOp::get):
    case static_cast<uint8_t>(StoreOp::add):
      expect_fields(f, 2, op == static_cast<uint8_t>(StoreOp::get) ? "get" : "add");
      r.keys = {key_from(f[0], limits)};
      r.number = int64_from(f[1]);
      break;
    case static_cast<uint8_t>(StoreOp::compare_set):
      expect_fields(f, 3, "compare_set");
      r.keys = {key_from(f[0], limits)};
      r.expected = std::move(f[1]);
      r.value = std::move(f[2]);
      break;
    case static_cast<uint8_t>(StoreOp::check):
      if (f.empty() || f.size() > limits.max_keys_per_request) throw ProtocolError("check takes 1 to max_keys keys");
      for (const auto& k : f) r.keys.push_back(key_from(k, limits));
      break;
    case static_cast<uint8_t>(StoreOp::erase):
      expect_fields(f, 1, "erase");
      r.keys = {key_from(f[0], limits)};
      break;
    case static_cast<uint8_t>(StoreOp::count):
      expect_fields(f, 0, "count");
      break;
    case static_cast<uint8_t>(StoreOp::wait):
      if (f.size() < 2 || f.size() > limits.max_keys_per_request + 1) throw ProtocolError("wait takes a timeout and 1 to max_keys keys");
      r.number = int64_from(f[0]);
      for (size_t i = 1; i < f.size(); ++i) r.keys.push_back(key_from(f[i], limits));
      break;
    default:
      throw ProtocolError("unknown request op " + std::to_string(op));
  }
  r.op = static_cast<StoreOp>(op);
  if ((r.op == StoreOp::get || r.op == StoreOp::wait) && r.number < 0) {
    throw ProtocolError("a negative timeout (" + std::to_string(r.number) + " ms)");
  }
  return r;
}

StoreReply decode_reply(const uint8_t* data, size_t size, const StoreLimits& limits) {
  Reader reader{data, size};
  auto f = reader.fields(limits);
  StoreReply r;
  if (data[0] > static_cast<uint8_t>(StoreStatus::refused)) {
    throw ProtocolError("unknown reply status " + std::to_string(data[0]));
  }
  r.status = static_cast<StoreStatus>(data[0]);
  expect_fields(f, 1, "a reply");
  if (r.status == StoreStatus::refused) {
    r.message.assign(f[0].begin(), f[0].end());
  } else {
    r.value = std::move(f[0]);
  }
  return r;
}

std::vector<uint8_t> framed(const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out;
  out.reserve(4 + body.size());
  put_u32(out, static_cast<uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

uint32_t frame_length(const uint8_t (&prefix)[4], const StoreLimits& limits) {
  uint32_t n = 0;
  std::memcpy(&n, prefix, sizeof n);
  if (n == 0 || n > limits.max_frame_bytes) {
    throw ProtocolError("a frame of " + std::to_string(n) + " bytes (1 to " + std::to_string(limits.max_frame_bytes) +
                        " allowed)");
  }
  return n;
}

}  // namespace locosim
