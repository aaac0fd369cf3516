// The Local-SGD core on its own: the anchor's pseudo-gradient, outer step and restart, its archive
// (what a joiner downloads), and its timing-only path (no values, no arithmetic).
#include <torch/serialize.h>

#include "algorithms/local_sgd.hpp"
#include "config/section.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;

TEST_CASE("local sgd: delta is theta - theta_i, the outer step moves theta by torch's rule, restart copies theta back") {
  OuterConfig heavy_ball;
  heavy_ball.rule = OuterRule::sgd;
  heavy_ball.lr = 0.5;
  heavy_ball.momentum = 0.5;
  std::vector<torch::Tensor> params = {torch::full({2}, 1.0)};
  Anchor anchor(params, heavy_ball);
  params[0].sub_(0.25);  // an inner step
  const auto delta = anchor.pseudo_gradient(params);
  CHECK(delta[0][0].item<float>() == 0.25f);
  anchor.outer_step(delta);  // m = 0.25, θ = 1 − 0.5·0.25
  anchor.outer_step(delta);  // m = 0.5·0.25 + 0.25, θ −= 0.5·0.375
  CHECK(anchor.theta()[0][0].item<float>() == doctest::Approx(1 - 0.125 - 0.1875));
  anchor.restart(params);
  CHECK(torch::equal(params[0], anchor.theta()[0].detach()));
}

TEST_CASE("local sgd: an anchor loaded from another's archive takes the same next outer step (momentum included)") {
  std::vector<torch::Tensor> params = {torch::arange(4, torch::kFloat32)};
  Anchor a(params, OuterConfig{});  // Nesterov, η 0.7, μ 0.9
  const std::vector<torch::Tensor> delta = {torch::full({4}, 0.1)};
  a.outer_step(delta);
  torch::serialize::OutputArchive out;
  a.save(out, "global", "outer");
  std::ostringstream bytes;
  out.save_to(bytes);
  Anchor b({torch::zeros({4})}, OuterConfig{});
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read);
  b.load(in, "global", "outer");
  // θ alone is not enough: an anchor with a's θ but a fresh momentum steps elsewhere.
  Anchor theta_only({a.theta()[0].detach().clone()}, OuterConfig{});
  a.outer_step(delta);
  b.outer_step(delta);
  theta_only.outer_step(delta);
  CHECK(torch::equal(a.theta()[0].detach(), b.theta()[0].detach()));
  CHECK_FALSE(torch::allclose(a.theta()[0].detach(), theta_only.theta()[0].detach()));
}

TEST_CASE("local sgd: on the meta device delta is the same shape tensors every time, and restart writes nothing") {
  std::vector<torch::Tensor> params = {torch::empty({3, 2}, torch::kMeta),
                                       torch::empty({4, 5}, torch::TensorOptions(torch::kMeta).dtype(torch::kBFloat16))
                                           .t()
                                           .requires_grad_()};
  Anchor anchor(params, OuterConfig{});
  CHECK_FALSE(anchor.values());
  for (size_t i = 0; i < params.size(); ++i) {  // θ: a tensor of its own, as a clone's would be
    const torch::Tensor& theta = anchor.theta()[i];
    CHECK(theta.is_meta());
    CHECK((theta.sizes() == params[i].sizes()));
    CHECK((theta.strides() == params[i].strides()));
    CHECK((theta.scalar_type() == params[i].scalar_type()));
    CHECK(theta.requires_grad());
    CHECK_FALSE(theta.is_same(params[i]));
    CHECK_FALSE(theta.grad_fn());
  }
  const auto first = anchor.pseudo_gradient(params), second = anchor.pseudo_gradient(params);
  CHECK(first[0].is_same(second[0]));
  CHECK(first[0].sizes() == params[0].sizes());
  anchor.outer_step(first);  // gives the optimizer its state's shapes
  anchor.restart(params);
  CHECK(params[0].is_meta());
}

TEST_CASE("local sgd: outer keys parse with the caller's defaults, and a contradicting nesterov flag is refused") {
  auto parse = [](const std::string& yaml) {
    Section s = Section::load_string(yaml, "outer.yaml");
    OuterConfig defaults;
    defaults.lr = 0.3;
    return OuterConfig::parse(s, defaults);
  };
  CHECK(parse("{}").lr == 0.3);
  CHECK(parse("{outer: adam, outer_eps: 0.2}").eps == 0.2);
  CHECK(parse("{nesterov: false}").rule == OuterRule::sgd);
  CHECK_THROWS_WITH(parse("{nesterov: false, outer: nesterov}"), doctest::Contains("contradicts outer: nesterov"));
}
