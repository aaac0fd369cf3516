// A tiny Llama-style causal LM (Touvron et al. 2023), written out in full like nanoGPT's model.py.
// Shape letters: B batch, T time, D d_model, H heads, E head size, K = E/2 rotary pairs, F ffn width, V vocab.
#include "models/llama.hpp"

#include <torch/nn.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace locosim {
namespace {

torch::nn::Linear linear_no_bias(int64_t in_features, int64_t out_features) {
  return torch::nn::Linear(torch::nn::LinearOptions(in_features, out_features).bias(false));
}

// Rotates each pair (x[2k], x[2k+1]) of every head by the angle t·theta^(-2k/E) of its position t
// (RoFormer, Su et al. 2021, eq. 34; Llama's interleaved-pair layout).
torch::Tensor apply_rope(const torch::Tensor& x_BTHE, const torch::Tensor& cos_TK,
                         const torch::Tensor& sin_TK) {
  const auto x_BTHK2 = x_BTHE.reshape({x_BTHE.size(0), x_BTHE.size(1), x_BTHE.size(2), -1, 2});
  const auto x0_BTHK = x_BTHK2.select(-1, 0), x1_BTHK = x_BTHK2.select(-1, 1);
  const auto cos_T1K = cos_TK.unsqueeze(1), sin_T1K = sin_TK.unsqueeze(1);
  return torch::stack({x0_BTHK * cos_T1K - x1_BTHK * sin_T1K, x0_BTHK * sin_T1K + x1_BTHK * cos_T1K}, -1)
      .flatten(-2);
}

}  // namespace

// ---- building blocks ----

// Root-mean-square norm with a learned scale and no bias (Zhang & Sennrich 2019).
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps) : eps_(eps) { weight_D_ = register_parameter("weight", torch::ones({dim})); }
  torch::Tensor forward(const torch::Tensor& x_BTD) {
    return x_BTD * torch::rsqrt(x_BTD.pow(2).mean(-1, /*keepdim=*/true) + eps_) * weight_D_;
  }

 private:
  double eps_;
  torch::Tensor weight_D_;
};

// Causal multi-head self-attention with RoPE on q and k, written out (LibTorch 1.13 has no SDPA).
class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const LlamaConfig& cfg) : n_heads_(cfg.n_heads) {
    wq_ = register_module("wq", linear_no_bias(cfg.d_model, cfg.d_model));
    wk_ = register_module("wk", linear_no_bias(cfg.d_model, cfg.d_model));
    wv_ = register_module("wv", linear_no_bias(cfg.d_model, cfg.d_model));
    wo_ = register_module("wo", linear_no_bias(cfg.d_model, cfg.d_model));
  }
  torch::Tensor forward(const torch::Tensor& x_BTD, const torch::Tensor& cos_TK, const torch::Tensor& sin_TK) {
    const int64_t B = x_BTD.size(0), T = x_BTD.size(1), D = x_BTD.size(2), E = D / n_heads_;
    const auto q_BHTE = apply_rope(wq_(x_BTD).view({B, T, n_heads_, E}), cos_TK, sin_TK).transpose(1, 2);
    const auto k_BHTE = apply_rope(wk_(x_BTD).view({B, T, n_heads_, E}), cos_TK, sin_TK).transpose(1, 2);
    const auto v_BHTE = wv_(x_BTD).view({B, T, n_heads_, E}).transpose(1, 2);
    auto scores_BHTT = torch::matmul(q_BHTE, k_BHTE.transpose(-2, -1)) / std::sqrt(static_cast<double>(E));
    const auto future_TT = torch::ones({T, T}, x_BTD.options().dtype(torch::kBool)).triu(/*diagonal=*/1);
    scores_BHTT = scores_BHTT.masked_fill(future_TT, -std::numeric_limits<float>::infinity());
    const auto y_BHTE = torch::matmul(torch::softmax(scores_BHTT, -1), v_BHTE);
    return wo_(y_BHTE.transpose(1, 2).reshape({B, T, D}));
  }

 private:
  int64_t n_heads_;
  torch::nn::Linear wq_{nullptr}, wk_{nullptr}, wv_{nullptr}, wo_{nullptr};
};

// SwiGLU MLP (Shazeer 2020): w2(silu(w1 x) * w3 x).
class FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const LlamaConfig& cfg) {
    w1_ = register_module("w1", linear_no_bias(cfg.d_model, cfg.ffn_hidden));
    w2_ = register_module("w2", linear_no_bias(cfg.ffn_hidden, cfg.d_model));
    w3_ = register_module("w3", linear_no_bias(cfg.d_model, cfg.ffn_hidden));
  }
  torch::Tensor forward(const torch::Tensor& x_BTD) { return w2_(torch::silu(w1_(x_BTD)) * w3_(x_BTD)); }

 private:
  torch::nn::Linear w1_{nullptr}, w2_{nullptr}, w3_{nullptr};
};

// Pre-norm residual block: x + attention(norm(x)), then + feed_forward(norm(.)).
class TransformerBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerBlockImpl(const LlamaConfig& cfg) {
    attention_norm_ = register_module("attention_norm", std::make_shared<RMSNormImpl>(cfg.d_model, cfg.norm_eps));
    attention_ = register_module("attention", std::make_shared<AttentionImpl>(cfg));
    ffn_norm_ = register_module("ffn_norm", std::make_shared<RMSNormImpl>(cfg.d_model, cfg.norm_eps));
    feed_forward_ = register_module("feed_forward", std::make_shared<FeedForwardImpl>(cfg));
  }
  torch::Tensor forward(const torch::Tensor& x_BTD, const torch::Tensor& cos_TK, const torch::Tensor& sin_TK) {
    const auto h_BTD = x_BTD + attention_->forward(attention_norm_->forward(x_BTD), cos_TK, sin_TK);
    return h_BTD + feed_forward_->forward(ffn_norm_->forward(h_BTD));
  }

 private:
  std::shared_ptr<RMSNormImpl> attention_norm_, ffn_norm_;
  std::shared_ptr<AttentionImpl> attention_;
  std::shared_ptr<FeedForwardImpl> feed_forward_;
};

// ---- the model ----

TinyLlamaImpl::TinyLlamaImpl(const LlamaConfig& cfg) : cfg_(cfg) {
  if (const std::string problem = cfg.problem(); !problem.empty()) {
    throw std::invalid_argument("LlamaConfig: " + problem);
  }
  cfg_.ffn_hidden = cfg.ffn_hidden_size();
  // Registration order fixes parameters() order: embedding, layers 0..L-1, final norm.
  tok_embeddings_ = register_module("tok_embeddings", torch::nn::Embedding(cfg_.vocab_size, cfg_.d_model));
  layers_ = register_module("layers", torch::nn::ModuleList());
  for (int64_t l = 0; l < cfg_.n_layers; ++l) {
    blocks_.push_back(std::make_shared<TransformerBlockImpl>(cfg_));
    layers_->push_back(blocks_.back());
  }
  norm_ = register_module("norm", std::make_shared<RMSNormImpl>(cfg_.d_model, cfg_.norm_eps));

  // RoPE angles t·theta^(-2k/E), computed in double for accuracy at long contexts.
  const int64_t E = cfg_.d_model / cfg_.n_heads;
  const auto inv_freq_K = torch::pow(cfg_.rope_theta, -torch::arange(0, E, 2, torch::kFloat64) / E);
  const auto angles_TK = torch::outer(torch::arange(cfg_.seq_len, torch::kFloat64), inv_freq_K);
  rope_cos_TK_ = register_buffer("rope_cos", angles_TK.cos().to(torch::kFloat32));
  rope_sin_TK_ = register_buffer("rope_sin", angles_TK.sin().to(torch::kFloat32));

  // GPT-2 init: N(0, 0.02), residual output projections scaled by 1/sqrt(2L); norm scales stay 1.
  torch::NoGradGuard no_grad;
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(cfg_.n_layers));
  for (auto& item : named_parameters()) {
    if (item.value().dim() < 2) continue;
    const std::string& name = item.key();
    const bool is_residual_out = name.size() >= 9 && (name.compare(name.size() - 9, 9, "wo.weight") == 0 ||
                                                      name.compare(name.size() - 9, 9, "w2.weight") == 0);
    torch::nn::init::normal_(item.value(), 0.0, is_residual_out ? residual_std : 0.02);
  }
}

torch::Tensor TinyLlamaImpl::forward(const torch::Tensor& x_BT) {
  if (x_BT.dim() != 2 || x_BT.size(1) > cfg_.seq_len) {
    throw std::invalid_argument("TinyLlama::forward: expected token ids of shape (B, T<=" +
                                std::to_string(cfg_.seq_len) + "), got " + c10::str(x_BT.sizes()));
  }
  const int64_t T = x_BT.size(1);
  const auto cos_TK = rope_cos_TK_.narrow(0, 0, T), sin_TK = rope_sin_TK_.narrow(0, 0, T);
  auto h_BTD = tok_embeddings_(x_BT);
  for (const auto& block : blocks_) h_BTD = block->forward(h_BTD, cos_TK, sin_TK);
  h_BTD = norm_->forward(h_BTD);
  return torch::matmul(h_BTD, tok_embeddings_->weight.t());  // tied output head: (B, T, V)
}

torch::Tensor TinyLlamaImpl::loss(const torch::Tensor& x_BT, const torch::Tensor& y_BT) {
  const auto logits_BTV = forward(x_BT);
  return torch::nn::functional::cross_entropy(logits_BTV.reshape({-1, cfg_.vocab_size}), y_BT.reshape({-1}));
}

int64_t TinyLlamaImpl::num_params() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.requires_grad() ? p.numel() : 0;
  return n;
}

// 6N for the weight matmuls (2N forward + 4N backward) plus 12·L·d·T for attention scores and
// values; PaLM (Chowdhery et al. 2022) Appendix B, as in nanoGPT's estimate_mfu.
double TinyLlamaImpl::flops_per_token() const {
  return 6.0 * static_cast<double>(num_params()) +
         12.0 * static_cast<double>(cfg_.n_layers * cfg_.d_model * cfg_.seq_len);
}

}  // namespace locosim
