// Muon (algorithms/muon.hpp): the Newton-Schulz iteration, one step by hand, AdamW on the rest, the
// strict keys, training with DDP and DiLoCo, the archive, the meta path and the FLOPs charged.
#include <torch/serialize.h>

#include <cmath>
#include <sstream>

#include "algorithms/muon.hpp"
#include "algorithms/optim.hpp"
#include "algorithms/policy_test_util.hpp"
#include "config/error.hpp"
#include "config/section.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

namespace {

OptimizerConfig parse_optimizer(const std::string& yaml) {
  Section s = Section::load_string(yaml, "opt.yaml");
  return OptimizerConfig::parse(s);
}

OptimizerConfig muon_config() {
  OptimizerConfig c = parse_optimizer("name: muon\n");
  c.schedule = "constant";
  c.clip_norm = 0;
  return c;
}

// The same formulas as the reference's muon_update, written out (fp64).
torch::Tensor ns_by_hand(torch::Tensor X, int steps) {
  X = X.to(torch::kFloat64);
  const bool tall = X.size(0) > X.size(1);
  if (tall) X = X.t();
  X = X / (std::sqrt((X * X).sum().item<double>()) + 1e-7);
  for (int i = 0; i < steps; ++i) {
    torch::Tensor A = X.matmul(X.t());
    X = 3.4445 * X + (-4.7750 * A + 2.0315 * A.matmul(A)).matmul(X);
  }
  return tall ? X.t() : X;
}

}  // namespace

// A random matrix with singular values spread over [1, 20] (random orthogonal U, V).
static torch::Tensor spread_spectrum(int64_t rows, int64_t cols) {
  const int64_t k = std::min(rows, cols);
  const torch::Tensor U = std::get<0>(torch::linalg_qr(torch::randn({rows, k}, torch::kFloat64)));
  const torch::Tensor V = std::get<0>(torch::linalg_qr(torch::randn({cols, k}, torch::kFloat64)));
  return U.matmul(torch::diag(torch::linspace(1, 20, k, torch::kFloat64))).matmul(V.t()).to(torch::kFloat32);
}

TEST_CASE("muon: Newton-Schulz takes a random matrix's singular values into the quintic's band around 1") {
  torch::manual_seed(3);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{32, 32}, {16, 48}, {48, 16}}) {
    // A Gaussian wide or tall matrix is well conditioned; a square one has singular values near 0
    // that five steps do not lift (slope 3.4445⁵ ≈ 485 at 0): the spread one is the square case's test.
    const torch::Tensor G = shape[0] == shape[1] ? spread_spectrum(shape[0], shape[1]) : torch::randn(shape);
    const torch::Tensor X = newton_schulz5(G, 5);
    CHECK(X.sizes() == G.sizes());
    const torch::Tensor sv = torch::linalg_svdvals(X.to(torch::kFloat64));
    CHECK(sv.min().item<double>() > 0.6);
    CHECK(sv.max().item<double>() < 1.25);
    const torch::Tensor sg = torch::linalg_svdvals(G.to(torch::kFloat64));
    CHECK(sg.max().item<double>() / sg.min().item<double>() > 2.5);  // the input's are not near 1 alike
  }
  const torch::Tensor X = newton_schulz5(spread_spectrum(24, 40), 5);
  const torch::Tensor sv = torch::linalg_svdvals(X.to(torch::kFloat64));
  CHECK(sv.min().item<double>() > 0.6);
  CHECK(sv.max().item<double>() < 1.25);
}

TEST_CASE("muon: one step on a matrix and a gain matches the formulas by hand, and the gain gets torch's AdamW exactly") {
  torch::manual_seed(5);
  torch::Tensor W = torch::randn({6, 4});  // tall: the update is scaled by sqrt(6/4)
  torch::Tensor gain = torch::randn({4});
  const torch::Tensor W0 = W.clone(), gain0 = gain.clone();
  const torch::Tensor gW1 = torch::randn({6, 4}), gW2 = torch::randn({6, 4}), gg1 = torch::randn({4}),
                      gg2 = torch::randn({4});
  MuonOptions mo;
  mo.lr = 0.05;
  mo.weight_decay = 0.1;
  const auto ao = torch::optim::AdamWOptions(0.003).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1);
  Muon opt({W}, {gain}, mo, ao);
  torch::Tensor gain_ref = gain0.clone();
  torch::optim::AdamW reference({gain_ref}, ao);
  opt.set_lrs(0.05, 0.003);
  double expected_lr = 0.05;
  torch::Tensor m = torch::zeros({6, 4}, torch::kFloat64), w = W0.to(torch::kFloat64);
  for (const auto& [gW, gg] : {std::pair{gW1, gg1}, std::pair{gW2, gg2}}) {
    W.mutable_grad() = gW.clone();
    gain.mutable_grad() = gg.clone();
    gain_ref.mutable_grad() = gg.clone();
    opt.step();
    reference.step();
    // By hand: m ← 0.95m + 0.05g, u = 0.05g + 0.95m, NS, ·sqrt(6/4), decoupled decay.
    const torch::Tensor g = gW.to(torch::kFloat64);
    m = 0.95 * m + 0.05 * g;
    const torch::Tensor u = ns_by_hand(0.05 * g + 0.95 * m, 5) * std::sqrt(6.0 / 4.0);
    w = w * (1 - expected_lr * 0.1) - expected_lr * u;
    CHECK((W.to(torch::kFloat64) - w).abs().max().item<double>() < 1e-5);
    CHECK(torch::equal(gain, gain_ref));
  }
  CHECK(!torch::equal(W, W0));
  CHECK(!torch::equal(gain, gain0));
}

TEST_CASE("muon: without nesterov the update is the orthogonalised momentum, and a wide matrix is not scaled") {
  torch::manual_seed(6);
  torch::Tensor W = torch::randn({3, 8});
  const torch::Tensor W0 = W.clone(), g = torch::randn({3, 8});
  MuonOptions mo;
  mo.lr = 0.1;
  mo.nesterov = false;
  mo.momentum = 0.5;
  mo.ns_steps = 3;
  Muon opt({W}, {}, mo, torch::optim::AdamWOptions(1e-3));
  W.mutable_grad() = g.clone();
  opt.step();
  const torch::Tensor expected = W0.to(torch::kFloat64) - 0.1 * ns_by_hand(0.5 * g, 3);
  CHECK((W.to(torch::kFloat64) - expected).abs().max().item<double>() < 1e-5);
}

TEST_CASE("muon: the model's first parameter (the tied embedding and head) and every vector go to AdamW") {
  TinyLlama model(tiny_config());
  const auto params = model->parameters();
  const auto mask = muon_matrix_mask(params);
  CHECK(params[0].size(0) == 256);
  CHECK(params[0].size(1) == 64);
  CHECK(!mask[0]);
  int64_t matrices = 0;
  for (size_t i = 1; i < params.size(); ++i) {
    CHECK(mask[i] == (params[i].dim() == 2));
    matrices += mask[i];
  }
  CHECK(matrices == 2 * 7);  // wq wk wv wo w1 w2 w3 in each of 2 blocks
}

TEST_CASE("muon: keys are read for muon only, unknown ones fail at file:line, defaults are the reference's") {
  const OptimizerConfig c = parse_optimizer("name: muon\n");
  CHECK(c.lr == 0.02);
  CHECK(c.momentum == 0.95);
  CHECK(c.nesterov);
  CHECK(c.ns_steps == 5);
  CHECK(c.adamw_lr == 1e-3);
  const OptimizerConfig d =
      parse_optimizer("name: muon\nlr: 0.01\nmomentum: 0.9\nnesterov: false\nns_steps: 3\nadamw_lr: 3e-4\nbetas: [0.8, 0.9]\n");
  CHECK(d.lr == 0.01);
  CHECK(d.momentum == 0.9);
  CHECK(!d.nesterov);
  CHECK(d.ns_steps == 3);
  CHECK(d.adamw_lr == 3e-4);
  CHECK(d.beta1 == 0.8);
  CHECK(parse_optimizer("name: adamw\n").lr == 1e-3);  // unchanged
  CHECK_THROWS_WITH(parse_optimizer("name: muon\nns_step: 5\n"), doctest::Contains("opt.yaml:2:1: ns_step"));
  CHECK_THROWS_WITH(parse_optimizer("name: adamw\nns_steps: 5\n"), doctest::Contains("opt.yaml:2:1: ns_steps"));
  CHECK_THROWS_WITH(parse_optimizer("name: adamw\nnesterov: true\n"), doctest::Contains("opt.yaml:2"));
  CHECK_THROWS_WITH(parse_optimizer("name: sgd\nadamw_lr: 1e-3\n"), doctest::Contains("opt.yaml:2"));
  CHECK_THROWS_WITH(parse_optimizer("name: muon\nns_steps: 0\n"), doctest::Contains("ns_steps: must be in [1, 100]"));
  CHECK_THROWS_WITH(parse_optimizer("name: lion\n"), doctest::Contains("muon"));
}

TEST_CASE("muon: the loss falls on the tiny model with DDP and with DiLoCo") {
  OptimizerConfig opt = muon_config();
  const Outcome ddp = train(spec_from("name: ddp\n"), 2, 30, opt);
  CHECK(ddp.eval_loss_end < ddp.eval_loss_start - 1.0);
  const Outcome diloco = train(spec_from("name: diloco\ninner_steps: 5\n"), 2, 30, opt);
  CHECK(diloco.eval_loss_end < diloco.eval_loss_start - 1.0);
}

TEST_CASE("muon: an optimizer loaded from another's archive takes the same next steps") {
  torch::manual_seed(9);
  TinyLlama a(tiny_config());
  TinyLlama b(tiny_config());
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < a->parameters().size(); ++i) b->parameters()[i].copy_(a->parameters()[i]);
  }
  const OptimizerConfig cfg = muon_config();
  auto pa = a->parameters(), pb = b->parameters();
  auto oa = make_optimizer(pa, cfg);
  const torch::Tensor x = torch::randint(0, 256, {2, 16}), y = torch::randint(0, 256, {2, 16});
  auto train_step = [&](TinyLlama& model, torch::optim::Optimizer& o, std::vector<torch::Tensor>& p, int64_t step) {
    o.zero_grad();
    model->loss(x, y).backward();
    optimizer_step(o, p, cfg, step, 10);
  };
  train_step(a, *oa, pa, 0);
  train_step(a, *oa, pa, 1);
  torch::serialize::OutputArchive out;
  oa->save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  // b: the same weights after a's two steps, and a fresh optimizer loaded from a's archive.
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < pa.size(); ++i) pb[i].copy_(pa[i]);
  }
  auto ob = make_optimizer(pb, cfg);
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read);
  ob->load(in);
  CHECK(ob->state().size() == oa->state().size());
  train_step(a, *oa, pa, 2);
  train_step(b, *ob, pb, 2);
  train_step(a, *oa, pa, 3);
  train_step(b, *ob, pb, 3);
  CHECK(max_abs_diff(pa, pb) == 0);
  // A fresh optimizer (no momenta) would not have taken the same steps.
  auto oc = make_optimizer(pb, cfg);
  train_step(b, *oc, pb, 4);
  train_step(a, *oa, pa, 4);
  CHECK(max_abs_diff(pa, pb) > 0);
}

TEST_CASE("muon: on the meta device a step gives the state its shapes and computes nothing") {
  TinyLlama model(tiny_config());
  auto params = model->parameters();  // as sim/simulate.cpp makes a timing-only run's
  for (auto& p : params) p = torch::empty(p.sizes(), p.options().device(torch::kMeta)).requires_grad_();
  const OptimizerConfig cfg = muon_config();
  auto opt = make_optimizer(params, cfg);
  for (auto& p : params) p.mutable_grad() = torch::empty_like(p);
  optimizer_step(*opt, params, cfg, 0, 10);
  optimizer_step(*opt, params, cfg, 1, 10);
  CHECK(opt->state().size() == 14);
  for (const auto& [key, state] : opt->state()) {
    CHECK(static_cast<const MuonParamState&>(*state).momentum_buffer.is_meta());
  }
  torch::serialize::OutputArchive out;
  opt->save(out);  // what a joiner downloads
}

TEST_CASE("muon: the FLOPs charged per step are the Newton-Schulz products of each matrix") {
  CHECK(newton_schulz_flops(64, 176, 5) == 5 * (4.0 * 64 * 64 * 176 + 2.0 * 64 * 64 * 64));
  CHECK(newton_schulz_flops(176, 64, 5) == newton_schulz_flops(64, 176, 5));  // the transpose costs the same
  TinyLlama model(tiny_config());
  const auto params = model->parameters();
  const double d = 64, f = static_cast<double>(model->config().ffn_hidden_size());
  const double per_block = 4 * 5 * (6 * d * d * d) + 3 * 5 * (4 * d * d * f + 2 * d * d * d);
  CHECK(muon_flops_per_step(params, 5) == doctest::Approx(2 * per_block));
  OptimizerConfig adamw;
  CHECK(optimizer_flops_per_step(params, adamw) == 0);
  CHECK(optimizer_flops_per_step(params, muon_config()) == muon_flops_per_step(params, 5));
}
