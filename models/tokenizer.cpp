// Byte-level tokenizer (see tokenizer.hpp).
#include "models/tokenizer.hpp"

#include <stdexcept>

namespace locosim {

torch::Tensor encode_bytes(std::string_view text) {
  auto ids_N = torch::empty({static_cast<int64_t>(text.size())}, torch::kInt64);
  auto* out = ids_N.data_ptr<int64_t>();
  for (size_t i = 0; i < text.size(); ++i) out[i] = static_cast<unsigned char>(text[i]);
  return ids_N;
}

std::string decode_bytes(const torch::Tensor& ids) {
  if (ids.dim() != 1 || !torch::isIntegralType(ids.scalar_type(), /*includeBool=*/false)) {
    throw std::invalid_argument("decode_bytes: expected a 1-D integer tensor of token ids, got " +
                                std::to_string(ids.dim()) + "-D " +
                                std::string(c10::toString(ids.scalar_type())));
  }
  auto ids_N = ids.to(torch::kInt64).contiguous();
  const auto* in = ids_N.data_ptr<int64_t>();
  std::string text(static_cast<size_t>(ids_N.numel()), '\0');
  for (int64_t i = 0; i < ids_N.numel(); ++i) {
    if (in[i] < 0 || in[i] >= kByteVocabSize) {
      throw std::invalid_argument("decode_bytes: id " + std::to_string(in[i]) + " at position " +
                                  std::to_string(i) + " is not a byte (must be in [0, 256))");
    }
    text[static_cast<size_t>(i)] = static_cast<char>(static_cast<unsigned char>(in[i]));
  }
  return text;
}

}  // namespace locosim
