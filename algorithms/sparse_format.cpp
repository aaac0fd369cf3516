// Sparse payloads' formats and byte counts (sparse_format.hpp).
#include "algorithms/sparse_format.hpp"

#include <algorithm>
#include <stdexcept>

namespace locosim {

const std::vector<std::string>& sparse_values_names() {
  static const std::vector<std::string> names = {"fp32", "fp16", "bf16", "sign"};
  return names;
}

SparseValues sparse_values_from_name(const std::string& name) {
  if (name == "fp32") return SparseValues::fp32;
  if (name == "fp16") return SparseValues::fp16;
  if (name == "bf16") return SparseValues::bf16;
  if (name == "sign") return SparseValues::sign;
  throw std::invalid_argument("unknown sparse value format '" + name + "'");
}

std::string sparse_values_name(SparseValues values) {
  switch (values) {
    case SparseValues::fp32: return "fp32";
    case SparseValues::fp16: return "fp16";
    case SparseValues::bf16: return "bf16";
    case SparseValues::sign: return "sign";
  }
  return "?";
}

const std::vector<std::string>& sparse_indices_names() {
  static const std::vector<std::string> names = {"packed", "int64"};
  return names;
}

SparseIndices sparse_indices_from_name(const std::string& name) {
  if (name == "packed") return SparseIndices::packed;
  if (name == "int64") return SparseIndices::int64;
  throw std::invalid_argument("unknown sparse index format '" + name + "'");
}

std::string sparse_indices_name(SparseIndices indices) {
  switch (indices) {
    case SparseIndices::packed: return "packed";
    case SparseIndices::int64: return "int64";
  }
  return "?";
}

int index_bytes(int64_t chunk_numel) {
  const uint64_t largest = static_cast<uint64_t>(chunk_numel > 0 ? chunk_numel - 1 : 0);
  if (largest <= 0xFFu) return 1;
  if (largest <= 0xFFFFu) return 2;
  if (largest <= 0xFFFFFFFFu) return 4;
  return 8;
}

double sparse_bytes(int64_t chunks, int64_t chunk_numel, int64_t k, SparseValues values, SparseIndices indices) {
  const int64_t kept = std::min(k, chunk_numel);
  const int64_t pairs = chunks * kept;
  const double b_idx = indices == SparseIndices::int64 ? 8.0 : kept == chunk_numel ? 0.0 : index_bytes(chunk_numel);
  if (values == SparseValues::sign) return static_cast<double>(pairs) * b_idx + static_cast<double>((pairs + 7) / 8) + 4.0;
  return static_cast<double>(pairs) * (b_idx + (values == SparseValues::fp32 ? 4.0 : 2.0));
}

}  // namespace locosim
