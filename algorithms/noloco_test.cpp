// NoLoCo: its outer rule against a hand computation (the pull toward the group's weights included),
// the group draw, and its reduction to DiLoCo when the group is everyone.
#include <map>
#include <set>

#include "algorithms/noloco.hpp"
#include "algorithms/policy_test_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

TEST_CASE("noloco: the draw covers every rank once in groups of n, the same for the same seed and step, another at the next") {
  const auto groups = noloco_groups(3, 0, 8, 2);
  REQUIRE(groups.size() == 4);
  std::set<int> seen;
  for (const auto& g : groups) {
    CHECK(g.size() == 2);
    CHECK(g[0] < g[1]);  // in rank order, as the transport requires
    seen.insert(g.begin(), g.end());
  }
  CHECK(seen.size() == 8);
  CHECK(noloco_groups(3, 0, 8, 2) == groups);
  std::set<std::vector<std::vector<int>>> draws;
  for (int t = 0; t < 20; ++t) draws.insert(noloco_groups(3, t, 8, 2));
  CHECK(draws.size() > 10);                       // the pairs change from step to step
  CHECK(noloco_groups(4, 0, 8, 2) != groups);     // and with the seed
  // 5 ranks in pairs: the remainder is a group of one.
  const auto odd = noloco_groups(0, 0, 5, 2);
  REQUIRE(odd.size() == 3);
  CHECK(odd[2].size() == 1);
  CHECK(noloco_groups(0, 0, 4, 4) == std::vector<std::vector<int>>{{0, 1, 2, 3}});
}

TEST_CASE("noloco: two outer steps on 4 workers equal the hand computation of delta <- a*delta - b*mean(D) - g*(phi - mean(phi))") {
  const int k = 4, outer_steps = 2;
  const double lr = 0.5, alpha = 0.5, beta = 0.7, gamma = 0.3;
  const uint64_t seed = 11;
  const NoLoCoConfig cfg = std::any_cast<const NoLoCoConfig&>(
      spec_from("{name: noloco, inner_steps: 1, pull: 0.3, seed: 11}").config);
  REQUIRE(cfg.outer_lr == beta);
  REQUIRE(cfg.outer_momentum == alpha);
  REQUIRE(cfg.group_size == 2);
  auto grad = [](int rank, int step) { return 0.1 * (rank + 1) * (step + 1) + 0.05 * rank * rank; };

  // By hand, in double: φ_r = 1, δ_r = 0 at the start; one SGD step per outer step.
  std::vector<double> phi(k, 1.0), delta(k, 0.0);
  for (int t = 0; t < outer_steps; ++t) {
    std::vector<double> d(k);
    for (int r = 0; r < k; ++r) d[r] = lr * grad(r, t);  // Δ = φ − θ = lr·g
    std::vector<double> next = phi;
    for (const auto& g : noloco_groups(seed, t, k, 2)) {
      double phi_mean = 0, d_mean = 0;
      for (int r : g) phi_mean += phi[r] / g.size(), d_mean += d[r] / g.size();
      for (int r : g) {
        delta[r] = alpha * delta[r] - beta * d_mean - gamma * (phi[r] - phi_mean);
        next[r] = phi[r] + delta[r];
      }
    }
    phi = next;
  }
  // The second step's pull acts: the pairs' φ differ after the first.
  CHECK(noloco_groups(seed, 0, k, 2) != noloco_groups(seed, 1, k, 2));

  std::vector<double> got(k);
  run_local_workers(k, [&](Transport& t) {
    torch::Tensor theta = torch::full({3}, 1.0, torch::requires_grad());
    PolicyContext ctx{{theta}, &t, plain_sgd(lr), outer_steps, 1.0};
    auto policy = make_noloco(cfg, ctx);
    for (int step = 0; step < outer_steps; ++step) {
      theta.mutable_grad() = torch::full({3}, grad(t.rank(), step));
      CHECK(policy->step(step) == Sync::committed);
    }
    got[t.rank()] = theta.detach()[0].item<double>();
  });
  for (int r = 0; r < k; ++r) {
    CAPTURE(r);
    CHECK(got[r] == doctest::Approx(phi[r]).epsilon(1e-6));
  }
  // The workers do not agree: no global average was ever taken.
  CHECK(std::set<double>(got.begin(), got.end()).size() > 1);
}

TEST_CASE("noloco: with the whole group as its group it is DiLoCo with outer sgd, momentum alpha and lr beta") {
  const OptimizerConfig adamw = [] {
    OptimizerConfig o;
    o.lr = 3e-3;
    return o;
  }();
  const Outcome noloco = train(spec_from("{name: noloco, inner_steps: 4, group_size: 4}"), 4, 12, adamw);
  const Outcome diloco =
      train(spec_from("{name: diloco, inner_steps: 4, outer: sgd, outer_lr: 0.7, outer_momentum: 0.5}"), 4, 12, adamw);
  CHECK(max_abs_diff(noloco.params, diloco.params) < 1e-5);
  // And pairs are not: their workers pull toward different means.
  const Outcome pairs = train(spec_from("{name: noloco, inner_steps: 4}"), 4, 12, adamw);
  CHECK(max_abs_diff(pairs.params, diloco.params) > 1e-4);
}

TEST_CASE("noloco: its keys are strict, pull follows outer_lr unless given") {
  const NoLoCoConfig c = std::any_cast<const NoLoCoConfig&>(spec_from("{name: noloco, outer_lr: 0.4}").config);
  CHECK(c.pull == 0.4);
  CHECK(c.inner_steps == 50);
  CHECK_THROWS_WITH(spec_from("{name: noloco, group_size: 0}"), doctest::Contains("group_size"));
  CHECK_THROWS_WITH(spec_from("{name: noloco, grup_size: 2}"), doctest::Contains("grup_size"));
}
