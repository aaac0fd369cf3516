// DiLoCo's outer optimizers (outer: nesterov | sgd | adam) worked out by hand on a constant
// pseudo-gradient, and the pruned pseudo-gradient: its TIES trim and merge, and the bytes it sends.
#include <torch/utils.h>

#include <cmath>

#include "algorithms/diloco.hpp"
#include "algorithms/local_transport.hpp"
#include "algorithms/outer_prune.hpp"
#include "algorithms/policies.hpp"
#include "algorithms/policy_test_util.hpp"
#include "config/error.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

namespace {

// Another transport's collectives, recording what each all-gather is priced at and what it carries.
class BytesTransport : public Transport {
 public:
  explicit BytesTransport(Transport& inner) : inner_(inner) {}
  std::vector<double> priced_bytes;   // the `bytes` of each all_gather
  std::vector<double> carried_bytes;  // the nbytes of its tensors
  int all_reduces = 0;

  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  double now_s() const override { return inner_.now_s(); }
  void compute(double flops, const std::function<void()>& work) override { inner_.compute(flops, work); }
  Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) override {
    ++all_reduces;
    return inner_.all_reduce_mean(xs, w);
  }
  Pending all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                     std::vector<std::vector<torch::Tensor>>& out) override {
    priced_bytes.push_back(bytes);
    double carried = 0;
    for (const auto& x : mine) carried += static_cast<double>(x.nbytes());
    carried_bytes.push_back(carried);
    return inner_.all_gather(mine, bytes, out);
  }

 private:
  Transport& inner_;
};

// One worker, θ = 0 (4 values), inner SGD lr 0.1 on the constant gradient 0.5, H = 2: every round's
// pseudo-gradient is Δ = 2 · 0.1 · 0.5 = 0.1. Returns θ after each of `rounds` rounds.
std::vector<double> theta_by_round(const std::string& yaml, int rounds) {
  const int inner_steps = 2, steps = rounds * inner_steps;
  std::vector<double> theta;
  run_local_workers(1, [&](Transport& t) {
    std::vector<torch::Tensor> params = {torch::zeros({4}).requires_grad_(true)};
    PolicyContext ctx{params, &t, plain_sgd(0.1), steps, 1.0};
    auto policy = make_policy(spec_from("name: diloco\ninner_steps: 2\n" + yaml), ctx);
    for (int64_t step = 0; step < steps; ++step) {
      params[0].mutable_grad() = torch::full({4}, 0.5);
      policy->step(step);
      // Every value moves alike: the round's θ is one number (NaN if not).
      const torch::Tensor p = params[0].detach();
      if ((step + 1) % inner_steps == 0) theta.push_back(torch::equal(p, p[0].expand({4})) ? p[0].item<double>() : NAN);
    }
  });
  return theta;
}

// The ConfigError a policy entry gives (a default one, naming no file, if it parses).
ConfigError error_of(const std::string& yaml) {
  try {
    (void)spec_from(yaml);
  } catch (const ConfigError& e) {
    return e;
  }
  return ConfigError("", 0, 0, "", "parsed");
}

}  // namespace

TEST_CASE("diloco: outer: nesterov | sgd | adam parse, nesterov: folds into outer:, misplaced keys are refused") {
  const auto config = [](const std::string& yaml) { return std::any_cast<const DiLoCoConfig&>(spec_from("name: diloco\n" + yaml).config); };
  CHECK(config("").outer.rule == OuterRule::nesterov);
  CHECK(config("").prune == 0);
  CHECK(config("outer: sgd\n").outer.rule == OuterRule::sgd);
  CHECK(config("nesterov: false\n").outer.rule == OuterRule::sgd);  // heavy ball, as it always was
  CHECK(config("nesterov: true\nouter: nesterov\n").outer.rule == OuterRule::nesterov);
  const DiLoCoConfig adam = config("outer: adam\n");
  CHECK(adam.outer.rule == OuterRule::adam);
  CHECK(adam.outer.eps == doctest::Approx(0.1));
  CHECK(adam.outer.beta1 == doctest::Approx(0.9));
  CHECK(adam.outer.beta2 == doctest::Approx(0.999));
  const DiLoCoConfig tuned = config("outer: adam\nouter_betas: [0.8, 0.95]\nouter_eps: 0.01\nprune: 0.5\n");
  CHECK(tuned.outer.beta2 == doctest::Approx(0.95));
  CHECK(tuned.outer.eps == doctest::Approx(0.01));
  CHECK(tuned.prune == doctest::Approx(0.5));
  CHECK(tuned.prune_merge == DiLoCoPruneMerge::mean);  // the paper's Table 6
  CHECK(config("prune: 0.5\nprune_merge: ties\n").prune_merge == DiLoCoPruneMerge::ties);
  CHECK_THROWS_WITH(spec_from("name: diloco\nprune_merge: ties\n"),
                    doctest::Contains("prune_merge: is read with prune > 0 only"));
  CHECK_THROWS_WITH(spec_from("name: diloco\nprune: 0.5\nprune_merge: disjoint\n"), doctest::Contains("prune_merge:"));

  // The resolved tree records the choice, also when it came from nesterov:.
  Section s = Section::load_string("name: diloco\nnesterov: false\n", "test.yaml");
  (void)parse_policy(s);
  CHECK(s.resolved_yaml().find("outer: sgd") != std::string::npos);
  CHECK(s.resolved_yaml().find("prune: 0") != std::string::npos);
  CHECK(s.resolved_yaml().find("prune_merge") == std::string::npos);  // unpruned runs keep their hash

  // Each error names the file, the line and the key.
  const ConfigError contradiction = error_of("name: diloco\nouter: adam\nnesterov: true\n");
  CHECK(contradiction.file() == "test.yaml");
  CHECK(contradiction.line() == 3);
  CHECK(contradiction.key() == "nesterov");
  CHECK(std::string(contradiction.what()).find("nesterov: true contradicts outer: adam") != std::string::npos);
  CHECK_THROWS_WITH(spec_from("name: diloco\nnesterov: false\nouter: nesterov\n"),
                    doctest::Contains("nesterov: false contradicts outer: nesterov"));
  const ConfigError unknown = error_of("name: diloco\nouter: rmsprop\n");
  CHECK(unknown.line() == 2);
  CHECK(unknown.key() == "outer");
  CHECK(std::string(unknown.what()).find("outer: must be one of") != std::string::npos);
  CHECK_THROWS_WITH(spec_from("name: diloco\nouter: adam\nouter_momentum: 0.9\n"),
                    doctest::Contains("outer_momentum: is read by outer: nesterov | sgd"));
  CHECK_THROWS_WITH(spec_from("name: diloco\nouter: sgd\nouter_eps: 0.1\n"),
                    doctest::Contains("outer_eps: is read by outer: adam only, not outer: sgd"));
  CHECK_THROWS_WITH(spec_from("name: diloco\nouter_betas: [0.9, 0.99]\n"), doctest::Contains("outer_betas: is read by"));
  CHECK_THROWS_WITH(spec_from("name: diloco\nouter: adam\nouter_betas: [0.9]\n"), doctest::Contains("outer_betas"));
  CHECK_THROWS_WITH(spec_from("name: diloco\nouter: adam\nouter_eps: 0\n"), doctest::Contains("outer_eps: must be in (0, 10]"));
  CHECK_THROWS_WITH(spec_from("name: diloco\nprune: 1\n"), doctest::Contains("prune: must be in [0, 1)"));
  CHECK_THROWS_WITH(spec_from("name: diloco\nprune: -0.1\n"), doctest::Contains("prune: must be in [0, 1)"));
  CHECK_THROWS_WITH(spec_from("name: diloco\nround: seconds\nround_s: 10\nprune: 0.5\n"),
                    doctest::Contains("prune: needs round: steps"));
  CHECK_THROWS_AS(spec_from("name: diloco\nouter: sgd\nprune: 0.5\npruning: 0.5\n"), ConfigError);  // unknown key
}

TEST_CASE("diloco: each outer rule on a constant pseudo-gradient, worked out by hand") {
  // Δ = 0.1 every round; η 0.5, μ 0.5. θ after rounds 1, 2, 3:
  // sgd, μ 0:      θ −= η·Δ                               -0.05, -0.10, -0.15
  // sgd, μ 0.5:    m = μm + Δ; θ −= η·m  (m = Δ, 1.5Δ, 1.75Δ)   -0.05, -0.125, -0.2125
  // nesterov, μ:   θ −= η·(Δ + μm)  (1.5Δ, 1.75Δ, 1.875Δ)        -0.075, -0.1625, -0.25625
  // adam, ε 0.1:   m̂ = Δ, v̂ = Δ² for a constant Δ (bias-corrected); θ −= η·Δ/(|Δ| + ε) = 0.25 a round
  const auto check = [](const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t r = 0; r < want.size(); ++r) CHECK(got[r] == doctest::Approx(want[r]).epsilon(1e-5));
  };
  check(theta_by_round("outer: sgd\nouter_lr: 0.5\nouter_momentum: 0\n", 3), {-0.05, -0.10, -0.15});
  check(theta_by_round("outer: sgd\nouter_lr: 0.5\nouter_momentum: 0.5\n", 3), {-0.05, -0.125, -0.2125});
  check(theta_by_round("outer: nesterov\nouter_lr: 0.5\nouter_momentum: 0.5\n", 3), {-0.075, -0.1625, -0.25625});
  check(theta_by_round("nesterov: false\nouter_lr: 0.5\nouter_momentum: 0.5\n", 3), {-0.05, -0.125, -0.2125});
  check(theta_by_round("outer: adam\nouter_lr: 0.5\n", 3), {-0.25, -0.5, -0.75});
  // ε scales Adam's step: ε 0.3 gives η·Δ/(Δ + ε) = 0.125 a round.
  check(theta_by_round("outer: adam\nouter_lr: 0.5\nouter_eps: 0.3\n", 2), {-0.125, -0.25});
}

TEST_CASE("prune: the bytes formula, sparse (positions + values) only where that is smaller") {
  // n 1000 (2-byte positions), fp32: k 500 → 500·(2 + 4) = 3000 < 4000.
  CHECK(prune_bytes(1000, 0.5, WireFormat::fp32) == 3000);
  // k 750 → 750·6 = 4500 > 4000: dense.
  CHECK(prune_bytes(1000, 0.25, WireFormat::fp32) == 4000);
  // n 100 (1-byte positions), fp16: k 25 → 25·(1 + 2) = 75 < 200.
  CHECK(prune_bytes(100, 0.75, WireFormat::fp16) == 75);
  // int4, n 1000, k 250: 250·2 + 125 + 4·4 = 641 > dense 500 + 4·16 = 564.
  CHECK(prune_bytes(1000, 0.75, WireFormat::int4) == 564);
  // int4, n 300, k 30: 30·2 + 15 + 4 = 79 < dense 150 + 20 = 170.
  CHECK(prune_bytes(300, 0.9, WireFormat::int4) == 79);
  // n 7, prune 0.5: ⌊3.5⌋ = 3 dropped, k 4 → 4·(1 + 4) = 20 < 28.
  CHECK(prune_bytes(7, 0.5, WireFormat::fp32) == 20);
  for (WireFormat f : {WireFormat::fp32, WireFormat::bf16, WireFormat::int8, WireFormat::e3m0}) {
    for (double prune : {0.1, 0.5, 0.9}) {
      PruneCodec codec(1000, prune, f);
      std::vector<torch::Tensor> wire;
      codec.encode(torch::randn({1000}), wire);
      double carried = 0;
      for (const auto& x : wire) carried += static_cast<double>(x.nbytes());
      CHECK(carried == codec.bytes());
      CHECK(codec.bytes() == prune_bytes(1000, prune, f));
      std::vector<torch::Tensor> meta;  // timing only: the same sizes, no values
      codec.encode(torch::empty({1000}, torch::TensorOptions().device(torch::kMeta)), meta);
      CHECK(static_cast<double>(meta[0].nbytes() + meta[1].nbytes()) == codec.bytes());
    }
  }
}

TEST_CASE("prune: the trim keeps the largest magnitudes, the TIES merge follows the elected sign, the mean counts every worker, by hand") {
  for (WireFormat f : {WireFormat::fp32, WireFormat::fp16}) {
    PruneCodec codec(4, 0.5, f);  // k 2: 2·(1 + b) bytes < 4·b, sparse
    CHECK(codec.sparse());
    std::vector<torch::Tensor> wire;
    codec.encode(torch::tensor({0.25f, -2.0f, 0.125f, 1.0f}), wire);
    CHECK(torch::equal(codec.decode(wire, 0), torch::tensor({0.0f, -2.0f, 0.0f, 1.0f})));
  }
  CHECK(PruneCodec(4, 0.25, WireFormat::fp32).sparse());  // k 3: 3·5 = 15 < 16; 0.2 drops none: dense
  CHECK_FALSE(PruneCodec(4, 0.2, WireFormat::fp32).sparse());
  std::vector<torch::Tensor> whole;
  PruneCodec(4, 0.2, WireFormat::fp32).encode(torch::tensor({0.25f, -2.0f, 0.125f, 1.0f}), whole);
  CHECK(whole[0].numel() == 0);
  CHECK(torch::equal(PruneCodec(4, 0.2, WireFormat::fp32).decode(whole, 0), torch::tensor({0.25f, -2.0f, 0.125f, 1.0f})));

  // Σ = (-0.5, -0.5, 0, 0): signs (-, -, 0, 0); the zeros take the majority, −. Each value is the
  // mean of the agreeing (negative) entries: (-1)/1, (-2)/1, none → 0, (-3)/1.
  const std::vector<torch::Tensor> three = {torch::tensor({0.0f, -2.0f, 0.0f, 1.0f}), torch::tensor({0.5f, 1.0f, 0.0f, 2.0f}),
                                            torch::tensor({-1.0f, 0.5f, 0.0f, -3.0f})};
  CHECK(torch::equal(ties_merge(three), torch::tensor({-1.0f, -2.0f, 0.0f, -3.0f})));
  // Σ = (0, 3, 2): signs (0, +, +), majority +; (1)/1, (1 + 2)/2, (2)/1: b's zero is no vote.
  const std::vector<torch::Tensor> two = {torch::tensor({1.0f, 1.0f, 2.0f}), torch::tensor({-1.0f, 2.0f, 0.0f})};
  CHECK(torch::equal(ties_merge(two), torch::tensor({1.0f, 1.5f, 2.0f})));
  // The plain mean counts every worker, a dropped value as its zero: (0 + 0.5 − 1)/3, (−2 + 1 + 0.5)/3, 0, 0.
  const torch::Tensor mean = mean_merge(three);
  CHECK(torch::allclose(mean, torch::tensor({-0.5f / 3, -0.5f / 3, 0.0f, 0.0f})));
  CHECK(torch::equal(mean_merge(two), torch::tensor({0.0f, 1.5f, 1.0f})));
}

TEST_CASE("prune: diloco all-gathers the trimmed pseudo-gradient and sends the bytes its formula says") {
  const int world = 2, steps = 4;  // H 2: two rounds
  // Tensors of 1000, 300 and 7 values at prune 0.5, fp32: 500·(2+4) + 150·(2+4) + 4·(1+4) = 3920 bytes.
  const double payload_bytes = 3000 + 900 + 20;
  std::vector<std::vector<double>> priced(world), carried(world);
  std::vector<int> all_reduces(world);
  std::vector<torch::Tensor> first(world);
  run_local_workers(world, [&](Transport& inner) {
    BytesTransport t(inner);
    torch::manual_seed(3 + t.rank());
    std::vector<torch::Tensor> params = {torch::zeros({1000}).requires_grad_(true), torch::zeros({10, 30}).requires_grad_(true),
                                         torch::zeros({7}).requires_grad_(true)};
    PolicyContext ctx{params, &t, plain_sgd(0.1), steps, /*wire_scale=*/2.0};
    auto policy = make_policy(spec_from("name: diloco\ninner_steps: 2\nprune: 0.5\n"), ctx);
    for (int64_t step = 0; step < steps; ++step) {
      for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
      policy->step(step);
    }
    priced[t.rank()] = t.priced_bytes;
    carried[t.rank()] = t.carried_bytes;
    all_reduces[t.rank()] = t.all_reduces;
    first[t.rank()] = params[0].detach().clone();
  });
  for (int r = 0; r < world; ++r) {
    CAPTURE(r);
    CHECK(all_reduces[r] == 0);
    CHECK(carried[r] == std::vector<double>{payload_bytes, payload_bytes});
    CHECK(priced[r] == std::vector<double>{2 * payload_bytes, 2 * payload_bytes});  // × wire_scale
  }
  CHECK(torch::equal(first[0], first[1]));  // the merge gives every worker the same θ
}

TEST_CASE("prune: diloco with a pruned pseudo-gradient trains, differs from unpruned and from the TIES merge, and repeats bit for bit") {
  const int world = 2, steps = 6;
  Outcome pruned = train(spec_from("name: diloco\ninner_steps: 2\nprune: 0.5\n"), world, steps, plain_sgd(0.05));
  Outcome again = train(spec_from("name: diloco\ninner_steps: 2\nprune: 0.5\n"), world, steps, plain_sgd(0.05));
  Outcome full = train(spec_from("name: diloco\ninner_steps: 2\n"), world, steps, plain_sgd(0.05));
  CHECK(max_abs_diff(pruned.params, again.params) == 0);
  CHECK(max_abs_diff(pruned.params, full.params) > 1e-5);
  CHECK(pruned.eval_loss_end < pruned.eval_loss_start);
  // The TIES merge is another rule: with two workers whose signs disagree, other parameters.
  Outcome ties = train(spec_from("name: diloco\ninner_steps: 2\nprune: 0.5\nprune_merge: ties\n"), world, steps, plain_sgd(0.05));
  CHECK(max_abs_diff(ties.params, pruned.params) > 1e-5);
  CHECK(ties.eval_loss_end < ties.eval_loss_start);
}
