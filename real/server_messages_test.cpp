// The parameter server's message checks against the pushes that once crashed rank 0 (a rank out of
// range or negative, an unknown dtype, dims of 2^40 or -1): each refused with the field it names.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "real/server_messages.hpp"

using namespace locosim;

namespace {

constexpr int64_t kFloat = 6, kDouble = 7;  // c10::ScalarType's numbers

// What the parity test's async DiLoCo pushes, in small: a pseudo-gradient and its counts.
const std::vector<TensorShape> kLayout = {{kFloat, {4, 3}}, {kDouble, {2}}};
const std::map<int64_t, Dtype> kDtypes = {{kFloat, {4, "Float"}}, {kDouble, {8, "Double"}}};

// A message of headers as given, each followed by as many data bytes as its shape needs (`short_by`
// fewer for the last).
std::vector<uint8_t> message(const std::vector<std::vector<int64_t>>& heads, size_t short_by = 0) {
  std::vector<uint8_t> out;
  for (const auto& h : heads) {
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(h.data()), reinterpret_cast<const uint8_t*>(h.data() + h.size()));
    if (h.size() < 2 || h[1] < 0 || h[1] > 4 || static_cast<size_t>(h[1]) + 2 != h.size()) continue;
    size_t n = h[0] == kDouble ? 8 : 4;
    for (size_t d = 2; d < h.size(); ++d) n *= h[d] >= 0 && h[d] <= 1024 ? static_cast<size_t>(h[d]) : 0;
    out.resize(out.size() + n, 0x11);
  }
  out.resize(out.size() - short_by);
  return out;
}

std::string refusal(const std::vector<uint8_t>& bytes, const MessageBounds& bounds) {
  try {
    parse_tensor_heads(bytes.data(), bytes.size(), bounds);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

std::vector<uint8_t> order(int64_t rank, int64_t push) {
  std::vector<uint8_t> out(16);
  std::memcpy(out.data(), &rank, 8);
  std::memcpy(out.data() + 8, &push, 8);
  return out;
}

std::string order_refusal(const std::vector<uint8_t>& bytes) {
  try {
    parse_push_order(bytes, 2);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("parameter server: a push laid out as the server's own rank's is read, and the reporter's bad pushes are refused") {
  const MessageBounds push = MessageBounds::exactly(kLayout, kDtypes);
  const auto good = message({{kFloat, 2, 4, 3}, {kDouble, 1, 2}});
  const auto heads = parse_tensor_heads(good.data(), good.size(), push);
  REQUIRE(heads.size() == 2);
  CHECK(heads[0].shape.sizes == std::vector<int64_t>{4, 3});
  CHECK(heads[0].offset == 32);
  CHECK(heads[0].bytes == 48);
  CHECK(heads[1].offset == 32 + 48 + 24);
  CHECK(heads[1].bytes == 16);

  CHECK(refusal(message({{250, 2, 4, 3}, {kDouble, 1, 2}}), push) ==
        "tensor 0: dtype 250, not one the policy sends (Float (6), Double (7))");
  CHECK(refusal(message({{kFloat, int64_t(1) << 40}}), push) == "tensor 0: 1099511627776 dims, where the policy sends 0 to 2");
  CHECK(refusal(message({{kFloat, -1}}), push) == "tensor 0: -1 dims, where the policy sends 0 to 2");
  CHECK(refusal(message({{kFloat, 2, int64_t(1) << 40, 3}}), push) ==
        "tensor 0: dim 0 of size 1099511627776, where the policy sends 0 to 64");
  CHECK(refusal(message({{kFloat, 2, 4, -1}}), push) == "tensor 0: dim 1 of size -1, where the policy sends 0 to 64");
  CHECK(refusal(message({{kFloat, 2, 3, 4}, {kDouble, 1, 2}}), push) ==
        "tensor 0: Float [3, 4], where the policy sends Float [4, 3]");
  CHECK(refusal(message({{kFloat, 2, 4, 3}, {kFloat, 1, 2}}), push) ==
        "tensor 1: Float [2], where the policy sends Double [2]");
  CHECK(refusal(message({{kFloat, 2, 4, 3}, {kDouble, 1, 2}}, 1), push) ==
        "tensor 1: the message ends inside its data (16 bytes)");
  CHECK(refusal(message({{kFloat, 2, 4, 3}}), push) == "1 tensors, where the policy sends 2");
  CHECK(refusal(message({{kFloat, 2, 4, 3}, {kDouble, 1, 2}, {kDouble, 1, 2}}), push) ==
        "tensor 2: more tensors than the 2 the policy sends");
  std::vector<uint8_t> cut = message({{kFloat, 2, 4, 3}});
  cut.resize(20);
  CHECK(refusal(cut, push) == "tensor 0: the message ends inside its size of dim 0");
}

TEST_CASE("parameter server: a reply's tensors together stay within the bytes the policy sends") {
  MessageBounds reply;
  reply.dtypes = kDtypes;
  reply.max_tensors = 2;
  reply.max_dims = 2;
  reply.max_total_bytes = 64;
  CHECK(refusal(message({{kFloat, 2, 4, 3}, {kDouble, 1, 2}}), reply) == "accepted");
  CHECK(refusal(message({{kFloat, 2, 4, 3}, {kDouble, 1, 3}}), reply) ==
        "tensor 1: shape [3] of Double brings the message over the 64 bytes the policy sends");
  // A product that would overflow 64 bits is over the bound, never wrapped around to a small one.
  reply.max_total_bytes = uint64_t(1) << 40;
  CHECK(refusal(message({{kFloat, 2, int64_t(1) << 32, int64_t(1) << 32}}), reply).find("brings the message over") !=
        std::string::npos);
}

TEST_CASE("parameter server: an order names one of the job's ranks and a push number") {
  CHECK(order_refusal(order(1, 5)) == "accepted");
  CHECK(parse_push_order(order(1, 5), 2).push == 5);
  CHECK(order_refusal(order(2, 0)) == "rank 2, not one of the job's 2");
  CHECK(order_refusal(order(-7, 0)) == "rank -7, not one of the job's 2");
  CHECK(order_refusal(order(0, -1)) == "push number -1");
  CHECK(order_refusal(std::vector<uint8_t>(8)) == "8 bytes, where an order is 16 (a rank, a push number)");
}
