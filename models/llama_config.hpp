// The proxy model's shape (the scenario's model: section), its presets and its checks. No LibTorch:
// the scenario loader reads it (llama.hpp builds the model).
#pragma once
#include <cstdint>
#include <string>

namespace locosim {

struct LlamaConfig {
  int64_t vocab_size = 256;  // V: byte-level tokens
  int64_t d_model = 64;      // d: width of the residual stream
  int64_t n_layers = 2;      // L: transformer blocks
  int64_t n_heads = 4;       // H: attention heads; head size d/H must be even for RoPE
  int64_t seq_len = 64;      // T: longest context (RoPE tables are built for this many positions)
  int64_t ffn_hidden = 0;    // SwiGLU hidden width; 0 = multiple of 16 nearest 8/3·d (Touvron et al. 2023 §2.2)
  double rope_theta = 10000.0;  // RoPE base (Su et al. 2021, RoFormer §3.4.2)
  double norm_eps = 1e-5;       // added to the mean square in RMSNorm

  // "tiny" (d64 L2 H4 T64), "small" (d128 L4 H4 T128), "base" (d256 L6 H8 T256).
  // Throws std::invalid_argument listing the valid names.
  static LlamaConfig preset(const std::string& name);
  // "" if the config can build a model, else the first problem, e.g.
  // "d_model (60) must be divisible by n_heads (8)".
  std::string problem() const;
  // ffn_hidden with the default resolved.
  int64_t ffn_hidden_size() const;
};

}  // namespace locosim
