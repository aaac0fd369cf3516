// The model's presets and checks (llama_config.hpp).
#include "models/llama_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace locosim {

LlamaConfig LlamaConfig::preset(const std::string& name) {
  struct Preset { const char* name; int64_t d_model, n_layers, n_heads, seq_len; };
  static constexpr Preset kPresets[] = {{"tiny", 64, 2, 4, 64}, {"small", 128, 4, 4, 128},
                                        {"base", 256, 6, 8, 256}};
  for (const auto& p : kPresets) {
    if (name != p.name) continue;
    LlamaConfig cfg;
    cfg.d_model = p.d_model, cfg.n_layers = p.n_layers, cfg.n_heads = p.n_heads, cfg.seq_len = p.seq_len;
    return cfg;
  }
  throw std::invalid_argument("unknown model preset \"" + name + "\"; valid presets: tiny, small, base");
}

std::string LlamaConfig::problem() const {
  const std::pair<const char*, int64_t> must_be_positive[] = {
      {"vocab_size", vocab_size}, {"d_model", d_model}, {"n_layers", n_layers},
      {"n_heads", n_heads}, {"seq_len", seq_len}};
  for (const auto& [key, value] : must_be_positive) {
    if (value <= 0) return std::string(key) + " must be > 0, got " + std::to_string(value);
  }
  if (ffn_hidden < 0) return "ffn_hidden must be >= 0 (0 = SwiGLU default), got " + std::to_string(ffn_hidden);
  if (!(rope_theta > 0)) return "rope_theta must be > 0, got " + std::to_string(rope_theta);
  if (!(norm_eps > 0)) return "norm_eps must be > 0, got " + std::to_string(norm_eps);
  if (d_model % n_heads != 0) {
    return "d_model (" + std::to_string(d_model) + ") must be divisible by n_heads (" +
           std::to_string(n_heads) + ")";
  }
  if ((d_model / n_heads) % 2 != 0) {
    return "head size d_model/n_heads (" + std::to_string(d_model / n_heads) +
           ") must be even for rotary position embeddings";
  }
  // The model trains for real, one copy per worker, each parameter with its gradient and AdamW's two
  // moments (16 bytes): past a billion parameters the copies no longer fit in memory.
  constexpr double kMaxParams = 1e9;
  const double d = static_cast<double>(d_model), f = static_cast<double>(ffn_hidden_size());
  const double params = static_cast<double>(vocab_size) * d +
                        static_cast<double>(n_layers) * (4 * d * d + 3 * d * f + 2 * d) + d;  // tied head, norms
  if (params > kMaxParams) {
    char count[32];
    std::snprintf(count, sizeof count, "%.3g", params);
    return std::string("the model would have ") + count +
           " parameters, more than 1e9 (it trains for real, one copy per worker): use a smaller model and "
           "price the larger one with timing.params";
  }
  return "";
}

int64_t LlamaConfig::ffn_hidden_size() const {
  if (ffn_hidden > 0) return ffn_hidden;
  return std::max<int64_t>(16, 16 * std::llround(8.0 * static_cast<double>(d_model) / 3.0 / 16.0));
}

}  // namespace locosim
