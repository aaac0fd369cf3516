// Tests for LlamaConfig and TinyLlama: shapes, cost formulas, causality, learning, determinism.
#include "models/llama.hpp"

#include <torch/optim.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "models/corpus.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;

namespace {

// A tiny deterministic grammar ("the cat sees a red ball. ..."): far below 8 bits per byte.
std::string grammar_text(size_t n_sentences) {
  const char* subjects[] = {"the cat", "a dog", "my friend", "the bird"};
  const char* verbs[] = {" sees ", " likes ", " finds "};
  const char* objects[] = {"a red ball. ", "the old tree. ", "some water. ", "a blue box. "};
  std::mt19937_64 gen(11);
  std::string text;
  for (size_t i = 0; i < n_sentences; ++i) {
    text += subjects[gen() % 4];
    text += verbs[gen() % 3];
    text += objects[gen() % 4];
  }
  return text;
}

bool same_parameters(const TinyLlama& a, const TinyLlama& b) {
  const auto pa = a->parameters(), pb = b->parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!torch::equal(pa[i], pb[i])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("models/LlamaConfig::preset: the three sizes, and a helpful error for others") {
  const auto tiny = LlamaConfig::preset("tiny");
  CHECK(tiny.d_model == 64);
  CHECK(tiny.n_layers == 2);
  CHECK(tiny.n_heads == 4);
  CHECK(tiny.seq_len == 64);
  const auto small = LlamaConfig::preset("small");
  CHECK((small.d_model == 128 && small.n_layers == 4 && small.n_heads == 4 && small.seq_len == 128));
  const auto base = LlamaConfig::preset("base");
  CHECK((base.d_model == 256 && base.n_layers == 6 && base.n_heads == 8 && base.seq_len == 256));
  CHECK(tiny.ffn_hidden_size() == 176);  // 8/3·64 = 170.7 -> 176
  CHECK(small.ffn_hidden_size() == 336);  // 341.3 -> 336
  CHECK(base.ffn_hidden_size() == 688);   // 682.7 -> 688
  CHECK_THROWS_WITH_AS(LlamaConfig::preset("huge"), doctest::Contains("tiny, small, base"),
                       std::invalid_argument);
}

TEST_CASE("models/LlamaConfig::problem: names the field and the values") {
  CHECK(LlamaConfig{}.problem() == "");
  LlamaConfig cfg;
  cfg.d_model = 60, cfg.n_heads = 8;
  CHECK(cfg.problem() == "d_model (60) must be divisible by n_heads (8)");
  cfg = LlamaConfig{};
  cfg.n_layers = 0;
  CHECK(cfg.problem() == "n_layers must be > 0, got 0");
  cfg = LlamaConfig{};
  cfg.seq_len = -3;
  CHECK(cfg.problem() == "seq_len must be > 0, got -3");
  cfg = LlamaConfig{};
  cfg.d_model = 12, cfg.n_heads = 4;  // head size 3 cannot be split into rotary pairs
  CHECK(cfg.problem().find("must be even") != std::string::npos);
  cfg = LlamaConfig{};
  cfg.norm_eps = 0;
  CHECK(cfg.problem().find("norm_eps") != std::string::npos);
  cfg.vocab_size = 0;  // the first problem is reported
  CHECK(cfg.problem() == "vocab_size must be > 0, got 0");
  CHECK_THROWS_AS(TinyLlama{cfg}, std::invalid_argument);
}

TEST_CASE("models/TinyLlama: num_params matches the hand count and flops_per_token = 6N + 12*L*d*T") {
  torch::manual_seed(0);
  TinyLlama model(LlamaConfig::preset("tiny"));
  const int64_t V = 256, d = 64, L = 2, F = 176, T = 64;
  // tied embedding V·d; per layer: 2 RMSNorm scales, wq wk wv wo, SwiGLU w1 w2 w3; final norm.
  const int64_t expected = V * d + L * (2 * d + 4 * d * d + 3 * d * F) + d;
  CHECK(expected == 117056);
  CHECK(model->num_params() == expected);
  CHECK(model->flops_per_token() == doctest::Approx(6.0 * expected + 12.0 * L * d * T));
  CHECK(model->config().ffn_hidden == F);
  const auto names = model->named_parameters().keys();
  CHECK(names.front() == "tok_embeddings.weight");
  CHECK(names[1] == "layers.0.attention_norm.weight");
  CHECK(names.back() == "norm.weight");
  CHECK(names.size() == 1 + 2 * 9 + 1);
}

TEST_CASE("models/TinyLlama: forward gives (B, T, V) logits for T <= seq_len") {
  torch::manual_seed(0);
  TinyLlama model(LlamaConfig::preset("tiny"));
  const auto x_BT = torch::randint(0, 256, {3, 10}, torch::kInt64);
  CHECK((model->forward(x_BT).sizes() == torch::IntArrayRef({3, 10, 256})));
  CHECK((model->forward(torch::zeros({1, 64}, torch::kInt64)).sizes() == torch::IntArrayRef({1, 64, 256})));
  CHECK_THROWS_AS(model->forward(torch::zeros({1, 65}, torch::kInt64)), std::invalid_argument);
  const auto loss = model->loss(x_BT, torch::randint(0, 256, {3, 10}, torch::kInt64));
  CHECK(loss.dim() == 0);
  CHECK(loss.item<double>() == doctest::Approx(std::log(256.0)).epsilon(0.05));  // near-uniform at init: 0.02-std weights
}

TEST_CASE("models/TinyLlama: causal, a later token does not change earlier logits") {
  torch::set_num_threads(1);
  torch::manual_seed(1);
  TinyLlama model(LlamaConfig::preset("tiny"));
  torch::NoGradGuard no_grad;
  const auto x_BT = torch::randint(0, 256, {2, 20}, torch::kInt64);
  auto changed_BT = x_BT.clone();
  changed_BT.select(1, 12).add_(1).remainder_(256);
  const auto before_BTV = model->forward(x_BT), after_BTV = model->forward(changed_BT);
  CHECK(torch::allclose(before_BTV.narrow(1, 0, 12), after_BTV.narrow(1, 0, 12), 0.0, 1e-6));
  CHECK_FALSE(torch::allclose(before_BTV.narrow(1, 12, 8), after_BTV.narrow(1, 12, 8), 0.0, 1e-3));
  // Order matters (RoPE): without positions, attention over the set {a, b, c} could not tell
  // "a b c" from "b a c" at the last token.
  const auto abc_BT = torch::tensor({97, 98, 99}, torch::kInt64).unsqueeze(0);
  const auto bac_BT = torch::tensor({98, 97, 99}, torch::kInt64).unsqueeze(0);
  CHECK_FALSE(torch::allclose(model->forward(abc_BT)[0][2], model->forward(bac_BT)[0][2], 0.0, 1e-4));
}

TEST_CASE("models/TinyLlama: loss falls well below ln(256) on a learnable corpus") {
  torch::set_num_threads(1);
  torch::manual_seed(2);
  const auto corpus = Corpus::from_text(grammar_text(2000), 0.1);
  TinyLlama model(LlamaConfig::preset("tiny"));
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(3e-3).weight_decay(0.0));
  Shard shard(corpus, 0, 1, ShardMode::iid, 64, 5);
  double first = 0, last = 0;
  for (int step = 0; step < 80; ++step) {
    const Batch batch = shard.next(8);
    opt.zero_grad();
    const auto loss = model->loss(batch.x_BT, batch.y_BT);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  const Batch held_out = eval_batch(corpus, 0, 8, 64);
  torch::NoGradGuard no_grad;
  const double eval_loss = model->loss(held_out.x_BT, held_out.y_BT).item<double>();
  MESSAGE("loss " << first << " -> " << last << ", eval " << eval_loss);
  CHECK(first > 5.0);
  CHECK(last < 2.0);
  CHECK(eval_loss < 2.0);
}

TEST_CASE("models/TinyLlama: same seed gives bit-identical weights and losses") {
  torch::set_num_threads(1);
  const auto corpus = Corpus::from_text(grammar_text(300), 0.1);
  auto train = [&](uint64_t seed, std::vector<double>* losses) {
    torch::manual_seed(seed);
    TinyLlama model(LlamaConfig::preset("tiny"));
    torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(3e-3));
    Shard shard(corpus, 0, 1, ShardMode::non_iid, 32, 9);
    for (int step = 0; step < 3; ++step) {
      const Batch batch = shard.next(4);
      opt.zero_grad();
      const auto loss = model->loss(batch.x_BT, batch.y_BT);
      loss.backward();
      opt.step();
      losses->push_back(loss.item<double>());
    }
    return model;
  };
  torch::manual_seed(7);
  const TinyLlama a0(LlamaConfig::preset("tiny"));
  torch::manual_seed(7);
  const TinyLlama b0(LlamaConfig::preset("tiny"));
  torch::manual_seed(8);
  const TinyLlama c0(LlamaConfig::preset("tiny"));
  CHECK(same_parameters(a0, b0));
  CHECK_FALSE(same_parameters(a0, c0));

  std::vector<double> losses_a, losses_b, losses_c;
  const auto a = train(7, &losses_a), b = train(7, &losses_b), c = train(8, &losses_c);
  CHECK(losses_a == losses_b);  // exact, not approximate
  CHECK(losses_a != losses_c);
  CHECK(same_parameters(a, b));
  CHECK(losses_a.back() != losses_a.front());  // training moved the weights
}
