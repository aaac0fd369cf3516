// SparseLoCo (algorithms/sparseloco.cpp): the 2-bit levels and the codec's bytes by hand, two rounds on
// 3 workers against a hand computation of e ← βe + Δ, top-k, Q, e ← e − sent, θ ← θ − α·mean, the error
// feedback's invariant (nothing is lost), the identity with DiLoCo (outer sgd) when everything is sent
// unquantized with β = 0, its loss falling, and its strict keys.
#include <cmath>
#include <numeric>

#include "algorithms/policy_test_util.hpp"
#include "algorithms/sparseloco_codec.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

namespace {

// tplr's 4-bin quantization in double: codes and the 4 levels.
std::pair<std::vector<int>, std::vector<double>> quantize_by_hand(const std::vector<double>& v, double range) {
  const double n = static_cast<double>(v.size());
  const double shift = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double ss = 0;
  for (double x : v) ss += (x - shift) * (x - shift);
  double step = range * std::sqrt(ss / (n - 1)) / 4;
  if (step == 0 || !std::isfinite(step)) step = 1;
  std::vector<int> codes;
  std::vector<double> sums(4, 0), counts(4, 0);
  for (double x : v) {
    const double c = x - shift;
    const int q = static_cast<int>(std::clamp(std::nearbyint(c / step + 2), 0.0, 3.0));
    codes.push_back(q);
    sums[q] += c;
    counts[q] += 1;
  }
  std::vector<double> levels;
  for (int j = 0; j < 4; ++j) levels.push_back(shift + (counts[j] > 0 ? sums[j] / counts[j] : 0));
  return {codes, levels};
}

std::vector<double> to_vector(const torch::Tensor& t) {
  torch::Tensor c = t.to(torch::kFloat64).contiguous().reshape({-1});
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

double payload_bytes(const std::vector<torch::Tensor>& wire) {
  double b = 0;
  for (const auto& t : wire) b += static_cast<double>(t.nbytes());
  return b;
}

}  // namespace

TEST_CASE("sparseloco: the 2-bit levels are tplr's: shift by the mean, steps of range*sigma/4, each level the mean of its values") {
  const std::vector<double> v = {3.0, -2.0, 0.5, 1.0, -4.0, 2.5, -0.25, 6.0};
  const Quantized q = sparseloco_quantize(torch::tensor(v, torch::kFloat64).to(torch::kFloat32), 6);
  const auto [codes, levels] = quantize_by_hand(v, 6);
  // By hand: mean 0.84375, σ = √(66.867/7) = 3.091, step = 6σ/4 = 4.636; c/step + 2 rounds -2 (1.39) and
  // -4 (0.96) to code 1, 6 (3.11) to 3, the rest to 2.
  CHECK(codes == std::vector<int>{2, 1, 2, 2, 1, 2, 2, 3});
  CHECK(to_vector(q.codes) == std::vector<double>(codes.begin(), codes.end()));
  const std::vector<double> got = to_vector(q.levels);
  REQUIRE(got.size() == 4);
  for (int j = 0; j < 4; ++j) CHECK(got[j] == doctest::Approx(levels[j]).epsilon(1e-6));
  CHECK(got[1] == doctest::Approx(-3.0));
  CHECK(got[3] == doctest::Approx(6.0));
  CHECK(got[2] == doctest::Approx(1.35));
  CHECK(got[0] == doctest::Approx(0.84375));  // an empty level is the shift
  // One value: σ is not finite, the step is 1, and the value is its own level.
  const Quantized one = sparseloco_quantize(torch::tensor({-3.5f}), 6);
  CHECK(to_vector(one.codes) == std::vector<double>{2});
  CHECK(one.levels[2].item<float>() == -3.5f);
}

TEST_CASE("sparseloco: a tensor's payload is its chunks' top-k positions in ceil(log2 n) bits, 2-bit codes and 4 fp32 levels, byte for byte") {
  CHECK(sparseloco_index_bits(4096) == 12);
  CHECK(sparseloco_index_bits(16) == 4);
  CHECK(sparseloco_index_bits(17) == 5);
  // 5×7 in 4×4 blocks: 4 chunks of 16 (zero-padded), k 3: ⌈12·4/8⌉ + ⌈12·2/8⌉ + 16 = 6 + 3 + 16.
  SparseLoCoConfig cfg;
  cfg.chunk = 4;
  cfg.topk = 3;
  const SparseLoCoCodec codec({5, 7}, cfg);
  CHECK(codec.bytes() == 25);
  CHECK(sparseloco_tensor_bytes(4, 16, 3, SparseLoCoValues::q2) == 25);
  CHECK(sparseloco_tensor_bytes(4, 16, 3, SparseLoCoValues::fp32) == 6 + 48);
  CHECK(sparseloco_tensor_bytes(4, 16, 16, SparseLoCoValues::q2) == 0 + 16 + 16);  // whole chunks: no positions
  // The paper's setting, one 4096×4096 matrix: 4096 blocks of 4096, 64 kept: 12 + 2 bits each.
  CHECK(sparseloco_tensor_bytes(4096, 4096, 64, SparseLoCoValues::q2) == 4096.0 * 64 * 14 / 8 + 16);

  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({5, 7});
  const std::vector<torch::Tensor> wire = codec.encode(x);
  REQUIRE(wire.size() == 3);
  CHECK(payload_bytes(wire) == codec.bytes());
  const torch::Tensor sent = codec.decode(wire);
  REQUIRE(sent.sizes() == x.sizes());
  // In each block exactly the 3 largest |x| are sent, each as one of the 4 levels.
  const torch::Tensor levels = wire[2];
  for (int br = 0; br < 2; ++br) {
    for (int bc = 0; bc < 2; ++bc) {
      const torch::Tensor block = x.slice(0, 4 * br, 4 * br + 4).slice(1, 4 * bc, 4 * bc + 4).reshape({-1});
      const torch::Tensor got = sent.slice(0, 4 * br, 4 * br + 4).slice(1, 4 * bc, 4 * bc + 4).reshape({-1});
      const torch::Tensor top = std::get<1>(torch::topk(block.abs(), std::min<int64_t>(3, block.numel())));
      const torch::Tensor chosen = torch::zeros({block.numel()}, torch::kBool).index_fill_(0, top, true);
      CHECK(torch::equal(got.ne(0), chosen));
      for (int64_t j = 0; j < block.numel(); ++j) {
        if (!chosen[j].item<bool>()) continue;
        CHECK(levels.eq(got[j]).any().item<bool>());
      }
    }
  }
  // fp32 values: the kept values exactly.
  cfg.values = SparseLoCoValues::fp32;
  const SparseLoCoCodec exact({5, 7}, cfg);
  const std::vector<torch::Tensor> w32 = exact.encode(x);
  CHECK(payload_bytes(w32) == exact.bytes());
  const torch::Tensor d32 = exact.decode(w32);
  CHECK(torch::equal(d32.ne(0), sent.ne(0)));
  CHECK(torch::equal(d32.masked_select(d32.ne(0)), x.masked_select(d32.ne(0))));
  // Timing only: on the meta device, tensors of the same sizes and no values.
  const std::vector<torch::Tensor> meta = codec.encode(torch::empty({5, 7}, torch::kMeta));
  CHECK(payload_bytes(meta) == codec.bytes());
  CHECK(meta[0].is_meta());
}

namespace {

double grad(int r, int s, int64_t j, size_t t) {
  return std::cos(0.37 * static_cast<double>(j) * static_cast<double>(t + 1) + 1.1 * r + 0.53 * s) + 0.05 * static_cast<double>(j);
}

// Two tensors (12 values in 1-D chunks of 4; a 6×5 matrix in 4×4 blocks, padded), K workers, plain SGD
// inner steps, and the SparseLoCo round every H steps, in double.
std::vector<std::vector<double>> by_hand(int k, int steps, int64_t h, double lr, double beta, double alpha, int64_t topk) {
  const std::vector<int64_t> sizes = {12, 30};
  auto chunk_of = [](size_t t, int64_t j) -> int64_t {
    if (t == 0) return j / 4;
    const int64_t row = j / 5, col = j % 5;
    return (row / 4) * 2 + col / 4;
  };
  std::vector<std::vector<double>> global;
  for (size_t t = 0; t < sizes.size(); ++t) {
    global.emplace_back();
    for (int64_t j = 0; j < sizes[t]; ++j) global[t].push_back(0.1 * static_cast<double>(j) - 1.0 * static_cast<double>(t));
  }
  std::vector<std::vector<std::vector<double>>> theta(k, global), e(k, global);
  for (auto& er : e) {
    for (auto& et : er) std::fill(et.begin(), et.end(), 0.0);
  }
  for (int s = 0; s < steps; ++s) {
    for (int r = 0; r < k; ++r) {
      for (size_t t = 0; t < sizes.size(); ++t) {
        for (int64_t j = 0; j < sizes[t]; ++j) theta[r][t][j] -= lr * grad(r, s, j, t);
      }
    }
    if ((s + 1) % h != 0) continue;
    for (size_t t = 0; t < sizes.size(); ++t) {
      std::vector<double> mean(sizes[t], 0.0);
      for (int r = 0; r < k; ++r) {
        for (int64_t j = 0; j < sizes[t]; ++j) e[r][t][j] = beta * e[r][t][j] + (global[t][j] - theta[r][t][j]);
        // Top-k of |e| per chunk, then the tensor's kept values quantized together.
        std::vector<int64_t> kept;
        for (int64_t c = 0; c < (t == 0 ? 3 : 4); ++c) {
          std::vector<int64_t> in;
          for (int64_t j = 0; j < sizes[t]; ++j) {
            if (chunk_of(t, j) == c) in.push_back(j);
          }
          std::sort(in.begin(), in.end(), [&](int64_t a, int64_t b) { return std::abs(e[r][t][a]) > std::abs(e[r][t][b]); });
          for (int64_t i = 0; i < std::min<int64_t>(topk, static_cast<int64_t>(in.size())); ++i) kept.push_back(in[i]);
        }
        std::vector<double> values;
        for (int64_t j : kept) values.push_back(e[r][t][j]);
        const auto [codes, levels] = quantize_by_hand(values, 6);
        for (size_t i = 0; i < kept.size(); ++i) {
          const double sent = levels[codes[i]];
          e[r][t][kept[i]] -= sent;
          mean[kept[i]] += sent / k;
        }
      }
      for (int64_t j = 0; j < sizes[t]; ++j) global[t][j] -= alpha * mean[j];
    }
    for (int r = 0; r < k; ++r) theta[r] = global;
  }
  return global;
}

}  // namespace

TEST_CASE("sparseloco: two rounds on 3 workers equal the hand computation of e <- beta*e + D, top-k per chunk, 2-bit levels, e <- e - sent, theta <- theta - alpha*mean") {
  const int k = 3, steps = 4;
  const std::vector<std::vector<int64_t>> shapes = {{12}, {6, 5}};
  const PolicySpec spec = spec_from("{name: sparseloco, inner_steps: 2, decay: 0.5, outer_lr: 0.8, topk: 2, chunk: 4}");
  std::vector<std::vector<torch::Tensor>> got(k);
  run_local_workers(k, [&](Transport& tr) {
    std::vector<torch::Tensor> params;
    for (size_t t = 0; t < shapes.size(); ++t) {
      const int64_t n = t == 0 ? 12 : 30;
      params.push_back((0.1 * torch::arange(n, torch::kFloat64) - 1.0 * static_cast<double>(t)).to(torch::kFloat32).view(shapes[t]).requires_grad_(true));
    }
    PolicyContext ctx{params, &tr, plain_sgd(0.5), steps, 1.0};
    auto policy = make_policy(spec, ctx);
    for (int s = 0; s < steps; ++s) {
      for (size_t t = 0; t < shapes.size(); ++t) {
        std::vector<double> g;
        for (int64_t j = 0; j < params[t].numel(); ++j) g.push_back(grad(tr.rank(), s, j, t));
        params[t].mutable_grad() = torch::tensor(g, torch::kFloat64).to(torch::kFloat32).view(shapes[t]);
      }
      CHECK(policy->step(s) == ((s + 1) % 2 == 0 ? Sync::committed : Sync::none));
    }
    for (auto& p : params) got[tr.rank()].push_back(p.detach().clone());
  });
  const auto want = by_hand(k, steps, 2, 0.5, 0.5, 0.8, 2);
  for (int r = 0; r < k; ++r) {
    for (size_t t = 0; t < want.size(); ++t) {
      const std::vector<double> mine = to_vector(got[r][t]);
      for (size_t j = 0; j < want[t].size(); ++j) {
        CAPTURE(r);
        CAPTURE(t);
        CAPTURE(j);
        CHECK(mine[j] == doctest::Approx(want[t][j]).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("sparseloco: the error feedback loses nothing - with beta 1 sum(sent) + e = sum(D), with beta < 1 e_t = beta*e_(t-1) + D_t - sent_t each round") {
  SparseLoCoConfig cfg;
  cfg.chunk = 8;
  cfg.topk = 3;
  const std::vector<torch::Tensor> like = {torch::zeros({37}), torch::zeros({9, 13})};
  torch::manual_seed(11);
  SUBCASE("beta 1: the sums") {
    cfg.decay = 1.0;
    ErrorFeedback ef(like, cfg);
    std::vector<torch::Tensor> sum_delta, sum_sent;
    for (const auto& t : like) {
      sum_delta.push_back(torch::zeros_like(t, torch::kFloat64));
      sum_sent.push_back(torch::zeros_like(t, torch::kFloat64));
    }
    for (int round = 0; round < 6; ++round) {
      std::vector<torch::Tensor> delta = {torch::randn({37}), torch::randn({9, 13})};
      std::vector<torch::Tensor> wire;
      const auto sent = ef.push(delta, wire);
      ef.commit(sent);
      for (size_t i = 0; i < like.size(); ++i) {
        sum_delta[i] += delta[i].to(torch::kFloat64);
        sum_sent[i] += sent[i].to(torch::kFloat64);
        // Sparse: at most k per chunk sent (5 chunks of 8; 2×2 blocks of 8×8).
        CHECK(sent[i].ne(0).sum().item<int64_t>() <= 3 * ef.codecs()[i].layout().chunks());
      }
    }
    for (size_t i = 0; i < like.size(); ++i) {
      const torch::Tensor lhs = sum_sent[i] + ef.buffer()[i].to(torch::kFloat64);
      CHECK((lhs - sum_delta[i]).abs().max().item<double>() < 1e-5);
      CHECK(ef.buffer()[i].abs().max().item<double>() > 0.1);  // most of it is still unsent
    }
  }
  SUBCASE("beta 0.9: each round, exactly as fp32 computes it, and the beta-weighted sums") {
    cfg.decay = 0.9;
    ErrorFeedback ef(like, cfg);
    std::vector<torch::Tensor> weighted;  // Σ_t β^(T−t) (Δ_t − sent_t), in double
    for (const auto& t : like) weighted.push_back(torch::zeros_like(t, torch::kFloat64));
    for (int round = 0; round < 6; ++round) {
      std::vector<torch::Tensor> before;
      for (const auto& e : ef.buffer()) before.push_back(e.clone());
      std::vector<torch::Tensor> delta = {torch::randn({37}), torch::randn({9, 13})};
      std::vector<torch::Tensor> wire;
      const auto sent = ef.push(delta, wire);
      // Before commit (a round given up stops here): nothing has left e.
      for (size_t i = 0; i < like.size(); ++i) CHECK(torch::equal(ef.buffer()[i], before[i] * 0.9 + delta[i]));
      ef.commit(sent);
      for (size_t i = 0; i < like.size(); ++i) {
        CHECK(torch::equal(ef.buffer()[i], (before[i] * 0.9 + delta[i]) - sent[i]));
        weighted[i] = weighted[i] * 0.9 + (delta[i].to(torch::kFloat64) - sent[i].to(torch::kFloat64));
      }
    }
    for (size_t i = 0; i < like.size(); ++i) {
      CHECK((weighted[i] - ef.buffer()[i].to(torch::kFloat64)).abs().max().item<double>() < 1e-5);
    }
  }
}

TEST_CASE("sparseloco: everything sent unquantized with beta 0 is DiLoCo with outer sgd, momentum 0, then sparse it trains") {
  const OptimizerConfig adamw = [] {
    OptimizerConfig o;
    o.lr = 3e-3;
    return o;
  }();
  const Outcome dense =
      train(spec_from("{name: sparseloco, inner_steps: 3, topk: 4096, chunk: 64, decay: 0, values: fp32, outer_lr: 0.7}"), 3, 6, adamw);
  const Outcome diloco = train(spec_from("{name: diloco, inner_steps: 3, outer: sgd, outer_momentum: 0, outer_lr: 0.7}"), 3, 6, adamw);
  CHECK(max_abs_diff(dense.params, diloco.params) == 0);
  const Outcome sparse = train(spec_from("{name: sparseloco, inner_steps: 4, topk: 8, chunk: 16}"), 4, 8, adamw);
  CHECK(max_abs_diff(sparse.params, diloco.params) > 1e-5);
  CHECK(sparse.eval_loss_end < sparse.eval_loss_start);
}

TEST_CASE("sparseloco: its keys are strict and name the file and line") {
  const SparseLoCoConfig c = std::any_cast<const SparseLoCoConfig&>(spec_from("{name: sparseloco}").config);
  CHECK(c.inner_steps == 30);
  CHECK(c.outer_lr == 1.0);
  CHECK(c.decay == 0.95);
  CHECK(c.topk == 64);
  CHECK(c.chunk == 64);
  CHECK(c.quant_range == 6);
  CHECK(c.values == SparseLoCoValues::q2);
  CHECK_THROWS_WITH(spec_from("{name: sparseloco, decay: 1.5}"), doctest::Contains("test.yaml:1"));
  CHECK_THROWS_WITH(spec_from("{name: sparseloco, decay: 1.5}"), doctest::Contains("decay"));
  CHECK_THROWS_WITH(spec_from("{name: sparseloco, inner_steps: 0}"), doctest::Contains("inner_steps"));
  CHECK_THROWS_WITH(spec_from("{name: sparseloco, chunk: 4, topk: 17}"), doctest::Contains("topk"));
  CHECK_THROWS_WITH(spec_from("{name: sparseloco, values: int8}"), doctest::Contains("values"));
  CHECK_THROWS_WITH(spec_from("{name: sparseloco,\n outer_momentum: 0.9}"), doctest::Contains("test.yaml:2"));
  CHECK_THROWS_WITH(spec_from("{name: sparseloco,\n outer_momentum: 0.9}"), doctest::Contains("outer_momentum"));
}
