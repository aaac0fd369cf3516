// The parameter server's messages, each field checked before it is trusted (see server_messages.hpp).
#include "real/server_messages.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace locosim {
namespace {

std::string dtype_list(const std::map<int64_t, Dtype>& dtypes) {
  std::string out;
  for (const auto& [code, d] : dtypes) out += (out.empty() ? "" : ", ") + d.name + " (" + std::to_string(code) + ")";
  return out;
}

std::string shape_text(const std::vector<int64_t>& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

}  // namespace

MessageBounds MessageBounds::exactly(const std::vector<TensorShape>& layout, const std::map<int64_t, Dtype>& dtypes) {
  MessageBounds b;
  b.dtypes = dtypes;
  b.layout = layout;
  b.max_tensors = layout.size();
  for (const auto& t : layout) {
    b.max_dims = std::max(b.max_dims, t.sizes.size());
    uint64_t numel = 1;
    for (int64_t s : t.sizes) numel *= static_cast<uint64_t>(s);
    b.max_total_bytes += numel * dtypes.at(t.dtype).element_bytes;
  }
  return b;
}

std::vector<TensorHead> parse_tensor_heads(const uint8_t* data, size_t size, const MessageBounds& bounds) {
  std::vector<TensorHead> heads;
  size_t offset = 0;
  uint64_t total = 0;
  while (offset < size) {
    const std::string tensor = "tensor " + std::to_string(heads.size());
    auto take = [&](const std::string& field) {
      int64_t v = 0;
      if (size - offset < sizeof v) throw std::invalid_argument(tensor + ": the message ends inside its " + field);
      std::memcpy(&v, data + offset, sizeof v);
      offset += sizeof v;
      return v;
    };
    if (heads.size() >= bounds.max_tensors) {
      throw std::invalid_argument(tensor + ": more tensors than the " + std::to_string(bounds.max_tensors) +
                                  " the policy sends");
    }
    TensorHead head;
    head.shape.dtype = take("dtype");
    const auto dtype = bounds.dtypes.find(head.shape.dtype);
    if (dtype == bounds.dtypes.end()) {
      throw std::invalid_argument(tensor + ": dtype " + std::to_string(head.shape.dtype) +
                                  ", not one the policy sends (" + dtype_list(bounds.dtypes) + ")");
    }
    const int64_t dims = take("number of dims");
    if (dims < 0 || static_cast<uint64_t>(dims) > bounds.max_dims) {
      throw std::invalid_argument(tensor + ": " + std::to_string(dims) + " dims, where the policy sends 0 to " +
                                  std::to_string(bounds.max_dims));
    }
    uint64_t numel = 1;  // at most max_total_bytes at every step: no overflow
    for (int64_t d = 0; d < dims; ++d) {
      const int64_t s = take("size of dim " + std::to_string(d));
      if (s < 0 || static_cast<uint64_t>(s) > bounds.max_total_bytes) {
        throw std::invalid_argument(tensor + ": dim " + std::to_string(d) + " of size " + std::to_string(s) +
                                    ", where the policy sends 0 to " + std::to_string(bounds.max_total_bytes));
      }
      head.shape.sizes.push_back(s);
      if (s != 0 && numel > bounds.max_total_bytes / static_cast<uint64_t>(s)) numel = bounds.max_total_bytes + 1;
      else numel *= static_cast<uint64_t>(s);
    }
    const uint64_t element_bytes = dtype->second.element_bytes;
    if (numel > (bounds.max_total_bytes - total) / element_bytes) {
      throw std::invalid_argument(tensor + ": shape " + shape_text(head.shape.sizes) + " of " + dtype->second.name +
                                  " brings the message over the " + std::to_string(bounds.max_total_bytes) +
                                  " bytes the policy sends");
    }
    if (!bounds.layout.empty()) {
      const TensorShape& want = bounds.layout[heads.size()];
      if (want.dtype != head.shape.dtype || want.sizes != head.shape.sizes) {
        throw std::invalid_argument(tensor + ": " + dtype->second.name + " " + shape_text(head.shape.sizes) +
                                    ", where the policy sends " + bounds.dtypes.at(want.dtype).name + " " +
                                    shape_text(want.sizes));
      }
    }
    head.bytes = static_cast<size_t>(numel * element_bytes);
    if (size - offset < head.bytes) {
      throw std::invalid_argument(tensor + ": the message ends inside its data (" + std::to_string(head.bytes) +
                                  " bytes)");
    }
    head.offset = offset;
    offset += head.bytes;
    total += head.bytes;
    heads.push_back(std::move(head));
  }
  if (!bounds.layout.empty() && heads.size() != bounds.layout.size()) {
    throw std::invalid_argument(std::to_string(heads.size()) + " tensors, where the policy sends " +
                                std::to_string(bounds.layout.size()));
  }
  return heads;
}

PushOrder parse_push_order(const std::vector<uint8_t>& bytes, int world_size) {
  int64_t fields[2] = {0, 0};
  if (bytes.size() != sizeof fields) {
    throw std::invalid_argument(std::to_string(bytes.size()) + " bytes, where an order is 16 (a rank, a push number)");
  }
  std::memcpy(fields, bytes.data(), sizeof fields);
  if (fields[0] < 0 || fields[0] >= world_size) {
    throw std::invalid_argument("rank " + std::to_string(fields[0]) + ", not one of the job's " +
                                std::to_string(world_size));
  }
  if (fields[1] < 0) throw std::invalid_argument("push number " + std::to_string(fields[1]));
  return {static_cast<int>(fields[0]), fields[1]};
}

}  // namespace locosim
