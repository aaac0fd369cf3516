// SPARTA and SPARTA-DiLoCo: the shared draw, the update rule against a hand computation, its
// reduction to FedAvg at p = 1, its loss falling, and its strict keys.
#include <set>

#include "algorithms/policy_test_util.hpp"
#include "algorithms/sparta.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

TEST_CASE("sparta: the draw takes floor or ceil of p*n distinct positions, the same for the same seed, step and tensor, each position with probability p") {
  const int64_t n = 1000;
  const double p = 0.0125;  // p·n = 12.5
  std::vector<int64_t> hits(n, 0);
  std::set<std::vector<int64_t>> draws;
  int64_t total = 0;
  const int steps = 4000;
  for (int s = 0; s < steps; ++s) {
    const std::vector<int64_t> at = sparta_indices(9, s, 2, n, p);
    CHECK((at.size() == 12 || at.size() == 13));
    CHECK(static_cast<int64_t>(at.size()) == sparta_count(9, s, 2, n, p));
    CHECK(std::set<int64_t>(at.begin(), at.end()).size() == at.size());  // distinct
    CHECK(std::is_sorted(at.begin(), at.end()));
    CHECK(at.front() >= 0);
    CHECK(at.back() < n);
    for (int64_t i : at) ++hits[i];
    total += static_cast<int64_t>(at.size());
    draws.insert(at);
  }
  CHECK(draws.size() == static_cast<size_t>(steps));  // another set every step
  // Each position is in with probability p: the mean count is p·n, and no position stands out
  // (about 50 hits each; a binomial's 6 standard deviations are about 42).
  CHECK(static_cast<double>(total) / steps == doctest::Approx(p * n).epsilon(0.01));
  CHECK(*std::max_element(hits.begin(), hits.end()) < 50 + 42);
  CHECK(*std::min_element(hits.begin(), hits.end()) > 50 - 42);
  // The same for the same (seed, step, tensor); another for another tensor or seed.
  CHECK(sparta_indices(9, 5, 2, n, p) == sparta_indices(9, 5, 2, n, p));
  CHECK(sparta_indices(9, 5, 3, n, p) != sparta_indices(9, 5, 2, n, p));
  CHECK(sparta_indices(10, 5, 2, n, p) != sparta_indices(9, 5, 2, n, p));
  // p = 1: everything; a large p (the dense branch of the draw) stays exact.
  CHECK(sparta_indices(0, 0, 0, 7, 1.0) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6});
  const auto half = sparta_indices(1, 1, 1, 64, 0.5);
  CHECK(half.size() == 32);
  CHECK(std::set<int64_t>(half.begin(), half.end()).size() == 32);
  // A tensor smaller than 1/p is averaged on a fraction p·n of the steps.
  int64_t small = 0;
  for (int s = 0; s < 10000; ++s) small += sparta_count(0, s, 0, 40, 0.005);
  CHECK(small == doctest::Approx(0.2 * 10000).epsilon(0.1));
}

namespace {

// Rank r's gradient of value j at step s.
double grad(int rank, int step, int64_t j) { return 0.1 * (rank + 1) * (step + 1) + 0.01 * static_cast<double>(j) * rank; }

// By hand, in double: every worker starts from θ = j (value j of tensor t, plus 100·t); one SGD step,
// then the drawn positions of each tensor averaged over the K workers; with H > 0, DiLoCo's outer
// Nesterov step every H steps.
std::vector<std::vector<std::vector<double>>> by_hand(int k, int steps, const std::vector<int64_t>& sizes, double lr,
                                                      uint64_t seed, double p, int64_t h, double eta, double mu) {
  std::vector<std::vector<std::vector<double>>> theta(k);  // [rank][tensor][value]
  for (int r = 0; r < k; ++r) {
    for (size_t t = 0; t < sizes.size(); ++t) {
      theta[r].emplace_back();
      for (int64_t j = 0; j < sizes[t]; ++j) theta[r][t].push_back(static_cast<double>(j) + 100.0 * t);
    }
  }
  auto global = theta[0];
  auto momentum = global;
  for (auto& m : momentum) std::fill(m.begin(), m.end(), 0.0);
  for (int s = 0; s < steps; ++s) {
    for (int r = 0; r < k; ++r) {
      for (size_t t = 0; t < sizes.size(); ++t) {
        for (int64_t j = 0; j < sizes[t]; ++j) theta[r][t][j] -= lr * grad(r, s, j + 100 * static_cast<int64_t>(t));
      }
    }
    for (size_t t = 0; t < sizes.size(); ++t) {
      for (int64_t j : sparta_indices(seed, s, t, sizes[t], p)) {
        double mean = 0;
        for (int r = 0; r < k; ++r) mean += theta[r][t][j] / k;
        for (int r = 0; r < k; ++r) theta[r][t][j] = mean;
      }
    }
    if (h == 0 || (s + 1) % h != 0) continue;
    for (size_t t = 0; t < sizes.size(); ++t) {
      for (int64_t j = 0; j < sizes[t]; ++j) {
        double delta = 0;
        for (int r = 0; r < k; ++r) delta += (global[t][j] - theta[r][t][j]) / k;
        momentum[t][j] = mu * momentum[t][j] + delta;
        global[t][j] -= eta * (delta + mu * momentum[t][j]);
        for (int r = 0; r < k; ++r) theta[r][t][j] = global[t][j];
      }
    }
  }
  return theta;
}

// The same on K in-process workers through the policy.
std::vector<std::vector<torch::Tensor>> through_policy(int k, int steps, const std::vector<int64_t>& sizes, double lr,
                                                       const PolicySpec& spec) {
  std::vector<std::vector<torch::Tensor>> got(k);
  run_local_workers(k, [&](Transport& tr) {
    std::vector<torch::Tensor> params;
    for (size_t t = 0; t < sizes.size(); ++t) {
      params.push_back((torch::arange(sizes[t], torch::kFloat32) + 100.0 * t).requires_grad_(true));
    }
    PolicyContext ctx{params, &tr, plain_sgd(lr), steps, 1.0};
    auto policy = make_policy(spec, ctx);
    for (int s = 0; s < steps; ++s) {
      for (size_t t = 0; t < sizes.size(); ++t) {
        params[t].mutable_grad() =
            (0.1 * (tr.rank() + 1) * (s + 1) + 0.01 * tr.rank() * (torch::arange(sizes[t], torch::kFloat64) + 100.0 * t))
                .to(torch::kFloat32);
      }
      CHECK(policy->step(s) == Sync::committed);
    }
    for (auto& p : params) got[tr.rank()].push_back(p.detach().clone());
  });
  return got;
}

void check_equal(const std::vector<std::vector<std::vector<double>>>& want,
                 const std::vector<std::vector<torch::Tensor>>& got) {
  for (size_t r = 0; r < want.size(); ++r) {
    for (size_t t = 0; t < want[r].size(); ++t) {
      for (size_t j = 0; j < want[r][t].size(); ++j) {
        CAPTURE(r);
        CAPTURE(t);
        CAPTURE(j);
        CHECK(got[r][t][static_cast<int64_t>(j)].item<double>() == doctest::Approx(want[r][t][j]).epsilon(1e-6));
      }
    }
  }
}

}  // namespace

TEST_CASE("sparta: three steps on 4 workers equal the hand computation of theta[S] <- mean(theta[S]) after each SGD step, per tensor") {
  const std::vector<int64_t> sizes = {40, 24};
  const double p = 0.25, lr = 0.5;
  const PolicySpec spec = spec_from("{name: sparta, p: 0.25, seed: 5}");
  const auto want = by_hand(4, 3, sizes, lr, 5, p, 0, 0, 0);
  const auto got = through_policy(4, 3, sizes, lr, spec);
  check_equal(want, got);
  // The workers agree on the positions the last step averaged, and only there (the gradients differ).
  const std::vector<int64_t> last = sparta_indices(5, 2, 0, 40, p);
  const std::set<int64_t> drawn(last.begin(), last.end());
  REQUIRE(drawn.size() == 10);
  for (int64_t j = 0; j < 40; ++j) {
    const bool same = got[0][0][j].item<float>() == got[3][0][j].item<float>();
    CHECK(same == (drawn.count(j) > 0));
  }
}

TEST_CASE("sparta_diloco: six steps on 3 workers equal the hand computation of SPARTA every step and DiLoCo's Nesterov outer step every H") {
  const std::vector<int64_t> sizes = {30, 8};
  const PolicySpec spec = spec_from("{name: sparta_diloco, p: 0.2, seed: 2, inner_steps: 3, outer_lr: 0.6, outer_momentum: 0.8}");
  const auto want = by_hand(3, 6, sizes, 0.5, 2, 0.2, 3, 0.6, 0.8);
  check_equal(want, through_policy(3, 6, sizes, 0.5, spec));
}

TEST_CASE("sparta: at p = 1 it is FedAvg every step, at its default p the workers drift apart and the loss falls") {
  const OptimizerConfig adamw = [] {
    OptimizerConfig o;
    o.lr = 3e-3;
    return o;
  }();
  const Outcome all = train(spec_from("{name: sparta, p: 1}"), 4, 8, adamw);
  const Outcome fedavg = train(spec_from("{name: fedavg, inner_steps: 1}"), 4, 8, adamw);
  CHECK(max_abs_diff(all.params, fedavg.params) == 0);
  const Outcome sparse = train(spec_from("{name: sparta}"), 4, 8, adamw);
  CHECK(max_abs_diff(sparse.params, fedavg.params) > 1e-5);
  CHECK(sparse.eval_loss_end < sparse.eval_loss_start);
  const Outcome combined = train(spec_from("{name: sparta_diloco, inner_steps: 4}"), 4, 8, adamw);
  CHECK(combined.eval_loss_end < combined.eval_loss_start);
}

TEST_CASE("sparta: its keys are strict and name the file and line") {
  const SpartaConfig c = std::any_cast<const SpartaConfig&>(spec_from("{name: sparta}").config);
  CHECK(c.p == 0.005);
  CHECK(c.seed == 0);
  CHECK(c.wire == WireFormat::fp32);
  const SpartaDiLoCoConfig d = std::any_cast<const SpartaDiLoCoConfig&>(spec_from("{name: sparta_diloco, p: 0.01}").config);
  CHECK(d.sparta.p == 0.01);
  CHECK(d.inner_steps == 100);
  CHECK(d.outer_lr == 0.7);
  CHECK(d.outer_momentum == 0.9);
  CHECK_THROWS_WITH(spec_from("{name: sparta, p: 0}"), doctest::Contains("test.yaml:1"));
  CHECK_THROWS_WITH(spec_from("{name: sparta, p: 0}"), doctest::Contains("p"));
  CHECK_THROWS_WITH(spec_from("{name: sparta, p: 1.5}"), doctest::Contains("p"));
  // Plain SPARTA has no outer step.
  CHECK_THROWS_WITH(spec_from("{name: sparta, inner_steps: 4}"), doctest::Contains("inner_steps"));
  CHECK_THROWS_WITH(spec_from("{name: sparta_diloco, inner_steps: 0}"), doctest::Contains("inner_steps"));
  CHECK_THROWS_WITH(spec_from("{name: sparta_diloco,\n p_sparta: 0.1}"), doctest::Contains("test.yaml:2"));
  CHECK_THROWS_WITH(spec_from("{name: sparta_diloco,\n p_sparta: 0.1}"), doctest::Contains("p_sparta"));
}
