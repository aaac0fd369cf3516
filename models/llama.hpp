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

#include "models/llama_config.hpp"

namespace locosim {

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
