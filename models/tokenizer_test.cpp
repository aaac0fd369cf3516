// Tests for the byte-level tokenizer.
#include "models/tokenizer.hpp"

#include <stdexcept>

#include "tests/doctest_torch.hpp"

using namespace locosim;

TEST_CASE("models/tokenizer: ASCII encodes to its byte values and decodes back") {
  const auto ids = encode_bytes("Hi!");
  CHECK((ids.scalar_type() == torch::kInt64));
  REQUIRE(ids.dim() == 1);
  REQUIRE(ids.size(0) == 3);
  CHECK(ids[0].item<int64_t>() == 'H');
  CHECK(ids[1].item<int64_t>() == 'i');
  CHECK(ids[2].item<int64_t>() == '!');
  CHECK(decode_bytes(ids) == "Hi!");
}

TEST_CASE("models/tokenizer: non-ASCII UTF-8 round-trips byte for byte") {
  const std::string text = "naïve café — 東京 🚀\n";  // 2-, 3- and 4-byte sequences
  const auto ids = encode_bytes(text);
  CHECK(ids.size(0) == static_cast<int64_t>(text.size()));
  CHECK(ids.max().item<int64_t>() < kByteVocabSize);
  CHECK(ids.min().item<int64_t>() >= 0);
  CHECK(ids.max().item<int64_t>() >= 0x80);  // bytes above 127 stay positive (no sign extension)
  CHECK(decode_bytes(ids) == text);
}

TEST_CASE("models/tokenizer: empty text and out-of-range ids") {
  CHECK(encode_bytes("").size(0) == 0);
  CHECK(decode_bytes(encode_bytes("")).empty());
  const auto too_big = torch::tensor({65, 256}, torch::kInt64);
  const auto negative = torch::tensor({-1}, torch::kInt64);
  const auto matrix = torch::zeros({2, 2}, torch::kInt64);
  CHECK_THROWS_AS(decode_bytes(too_big), std::invalid_argument);
  CHECK_THROWS_AS(decode_bytes(negative), std::invalid_argument);
  CHECK_THROWS_AS(decode_bytes(matrix), std::invalid_argument);
}
