// Eager and delayed DiLoCo: their outer steps against a hand computation on 3 workers, and eager on
// one worker being DiLoCo.
#include "algorithms/eager_diloco.hpp"
#include "algorithms/policy_test_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

namespace {

// Each worker's θ after `rounds` rounds of H = 1 with plain SGD (lr 0.5) on constant gradients, outer
// heavy ball (η 0.6, μ 0.5).
std::vector<double> run_policy(const std::string& variant, int k, int rounds) {
  const EagerDiLoCoConfig cfg = std::any_cast<const EagerDiLoCoConfig&>(
      spec_from("{name: eager_diloco, inner_steps: 1, variant: " + variant + ", outer: sgd, outer_lr: 0.6, outer_momentum: 0.5}").config);
  std::vector<double> out(k);
  run_local_workers(k, [&](Transport& t) {
    torch::Tensor theta = torch::full({2}, 1.0, torch::requires_grad());
    PolicyContext ctx{{theta}, &t, plain_sgd(0.5), rounds, 1.0};
    auto policy = make_eager_diloco(cfg, ctx);
    for (int step = 0; step < rounds; ++step) {
      theta.mutable_grad() = torch::full({2}, 0.2 * (t.rank() + 1) + 0.1 * step);
      policy->step(step);
    }
    policy->finish();
    out[t.rank()] = theta.detach()[0].item<double>();
  });
  return out;
}

double grad(int rank, int step) { return 0.2 * (rank + 1) + 0.1 * step; }

// The same by hand, in double.
std::vector<double> by_hand(bool eager, int k, int rounds) {
  const double lr = 0.5, eta = 0.6, mu = 0.5;
  std::vector<double> theta(k, 1.0), m(k, 0.0), stale(k, 0.0);
  double stale_mean = 0;
  bool have_stale = false;
  for (int t = 0; t < rounds; ++t) {
    std::vector<double> fresh(k);
    double mean = 0;
    for (int r = 0; r < k; ++r) {
      fresh[r] = lr * static_cast<float>(grad(r, t));  // Δ = θ − (θ − lr·g)
      mean += fresh[r] / k;
    }
    for (int r = 0; r < k; ++r) {
      double g = 0;
      bool step = true;
      if (eager) {
        g = (have_stale ? stale_mean : 0.0) + (fresh[r] - (have_stale ? stale[r] : 0.0)) / k;
      } else if (have_stale) {
        g = stale_mean;
      } else {
        step = false;
      }
      if (step) {
        m[r] = mu * m[r] + g;
        theta[r] -= eta * m[r];
      }
    }
    stale = fresh;
    stale_mean = mean;
    have_stale = true;
  }
  return theta;
}

}  // namespace

TEST_CASE("eager_diloco: three rounds on 3 workers equal the hand computation, eager and delayed") {
  for (const bool eager : {true, false}) {
    CAPTURE(eager);
    const std::vector<double> got = run_policy(eager ? "eager" : "delayed", 3, 3);
    const std::vector<double> expected = by_hand(eager, 3, 3);
    for (int r = 0; r < 3; ++r) CHECK(got[r] == doctest::Approx(expected[r]).epsilon(1e-5));
    // Eager workers differ by their own fresh shares; delayed ones apply the same average.
    CHECK((got[0] != got[2]) == eager);
  }
}

TEST_CASE("eager_diloco: on one worker eager is DiLoCo, and delayed is not") {
  OptimizerConfig adamw;
  adamw.lr = 3e-3;
  const Outcome eager = train(spec_from("{name: eager_diloco, inner_steps: 3}"), 1, 12, adamw);
  const Outcome diloco = train(spec_from("{name: diloco, inner_steps: 3}"), 1, 12, adamw);
  const Outcome delayed = train(spec_from("{name: eager_diloco, inner_steps: 3, variant: delayed}"), 1, 12, adamw);
  CHECK(max_abs_diff(eager.params, diloco.params) < 1e-5);
  CHECK(max_abs_diff(delayed.params, diloco.params) > 1e-4);
}

TEST_CASE("eager_diloco: its keys are strict and take DiLoCo's outer keys") {
  const auto c = std::any_cast<const EagerDiLoCoConfig&>(spec_from("{name: eager_diloco, outer: adam}").config);
  CHECK(c.outer.rule == OuterRule::adam);
  CHECK(c.variant == EagerVariant::eager);
  CHECK_THROWS_WITH(spec_from("{name: eager_diloco, variant: lazy}"), doctest::Contains("variant: must be one of"));
  CHECK_THROWS_WITH(spec_from("{name: eager_diloco, prune: 0.5}"), doctest::Contains("prune"));
}
