// The parameter server's messages as they cross the job's store (real/c10d_server.cpp), and their
// checks. Torch-free: a fuzz target and the tests drive them alone.
//
//   "ps/order/<c>"     [int64 rank][int64 push number]
//   "ps/push/<r>/<n>"  tensors, each [int64 dtype][int64 dims][int64 size] x dims [its data]
//   "ps/reply/<r>/<n>" the same
//
// Every field is checked against what the run can send before anything is allocated for it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace locosim {

struct TensorShape {
  int64_t dtype = 0;  // c10::ScalarType's number
  std::vector<int64_t> sizes;
};

struct Dtype {
  size_t element_bytes = 0;
  std::string name;  // for messages: "Float"
};

// What a message may hold.
struct MessageBounds {
  std::map<int64_t, Dtype> dtypes;  // the dtypes the policy sends (element_bytes > 0)
  size_t max_tensors = 0;
  size_t max_dims = 0;
  uint64_t max_total_bytes = 0;     // all the tensors' data together
  std::vector<TensorShape> layout;  // when not empty: exactly these tensors, in this order

  // Exactly `layout`: a push is laid out as the server's own rank's.
  static MessageBounds exactly(const std::vector<TensorShape>& layout, const std::map<int64_t, Dtype>& dtypes);
};

// A tensor of a message: its shape, and where its data lies in the message.
struct TensorHead {
  TensorShape shape;
  size_t offset = 0;
  size_t bytes = 0;
};

// The tensors of a message, each checked against `bounds`. Throws std::invalid_argument naming the
// tensor (from 0) and the field.
std::vector<TensorHead> parse_tensor_heads(const uint8_t* data, size_t size, const MessageBounds& bounds);

struct PushOrder {
  int rank = 0;
  int64_t push = 0;  // the rank's push number, from 0
};

// Throws std::invalid_argument unless `bytes` is a rank of the job's `world_size` and a push number.
PushOrder parse_push_order(const std::vector<uint8_t>& bytes, int world_size);

}  // namespace locosim
