// A tiny Llama-style causal language model (RMSNorm, RoPE, SwiGLU, tied embedding), single-device.
// Parallelism and communication live in algorithms/; this file only computes loss and reports cost.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

class RMSNormImpl;
class TransformerBlockImpl;

class TinyLlamaImpl : public torch::nn::Module {
 public:
  // Throws std::invalid_argument if cfg.problem() is not "". Draws its initial weights from
  // libtorch's global RNG: seed it (torch::manual_seed) first for reproducible weights.
  explicit TinyLlamaImpl(const LlamaConfig& cfg);

  torch::Tensor forward(const torch::Tensor& x_BT);  // int64 (B, T<=seq_len) -> logits (B, T, V)
  torch::Tensor loss(const torch::Tensor& x_BT, const torch::Tensor& y_BT);  // mean cross-entropy
  int64_t num_params() const;      // trainable parameters, the tied embedding counted once
  double flops_per_token() const;  // training (forward + backward) FLOPs per token
  const LlamaConfig& config() const { return cfg_; }  // ffn_hidden resolved

 private:
  LlamaConfig cfg_;
  torch::nn::Embedding tok_embeddings_{nullptr};  // (V, d), also the output head (tied)
  torch::nn::ModuleList layers_{nullptr};
  std::vector<std::shared_ptr<TransformerBlockImpl>> blocks_;  // the same modules as layers_, typed
  std::shared_ptr<RMSNormImpl> norm_;
  torch::Tensor rope_cos_TK_, rope_sin_TK_;  // (T, head_dim/2) buffers, not parameters
};
TORCH_MODULE(TinyLlama);

}  // namespace locosim
