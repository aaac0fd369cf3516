// Moshpit SGD: its groups on full and partial grids, the exact mean after d rounds on a full grid,
// its reduction to FedAvg on a one-dimensional grid, and its keys.
#include <set>

#include "algorithms/moshpit.hpp"
#include "algorithms/policy_test_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

namespace {
using Groups = std::vector<std::vector<int>>;
}  // namespace

TEST_CASE("moshpit: the groups are the grid's rows along the round's axis, turning each round") {
  // 9 ranks on a 3 x 3 grid (grid_size 0: the smallest side that holds them).
  CHECK(moshpit_groups(0, 9, 2, 0) == Groups{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}});
  CHECK(moshpit_groups(1, 9, 2, 0) == Groups{{0, 3, 6}, {1, 4, 7}, {2, 5, 8}});
  CHECK(moshpit_groups(2, 9, 2, 0) == moshpit_groups(0, 9, 2, 0));
  // 5 ranks in a 3 x 3 grid: the empty cells only make some groups smaller.
  CHECK(moshpit_groups(0, 5, 2, 0) == Groups{{0, 1, 2}, {3, 4}});
  CHECK(moshpit_groups(1, 5, 2, 0) == Groups{{0, 3}, {1, 4}, {2}});
  // A side of 2 for 5 ranks: the last axis is as long as they need.
  CHECK(moshpit_groups(0, 5, 2, 2) == Groups{{0, 1}, {2, 3}, {4}});
  CHECK(moshpit_groups(1, 5, 2, 2) == Groups{{0, 2, 4}, {1, 3}});
  // 8 ranks on a 2 x 2 x 2 cube: three axes in turn.
  CHECK(moshpit_groups(0, 8, 3, 0) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(moshpit_groups(1, 8, 3, 0) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(moshpit_groups(2, 8, 3, 0) == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  // One dimension: everyone, every round.
  CHECK(moshpit_groups(5, 4, 1, 0) == Groups{{0, 1, 2, 3}});
}

TEST_CASE("moshpit: on a full 2 x 2 grid, two rounds give every worker the exact mean and one round does not") {
  const int k = 4;
  const MoshpitConfig cfg =
      std::any_cast<const MoshpitConfig&>(spec_from("{name: moshpit, inner_steps: 1, grid_dims: 2}").config);
  // θ_r starts at r² and the gradients are zero: the rounds only average.
  std::vector<double> after_one(k), after_two(k);
  run_local_workers(k, [&](Transport& t) {
    torch::Tensor theta = torch::full({3}, static_cast<double>(t.rank() * t.rank()), torch::requires_grad());
    PolicyContext ctx{{theta}, &t, plain_sgd(0.1), 2, 1.0};
    auto policy = make_moshpit(cfg, ctx);
    for (int step = 0; step < 2; ++step) {
      theta.mutable_grad() = torch::zeros({3});
      CHECK(policy->step(step) == Sync::committed);
      (step == 0 ? after_one : after_two)[t.rank()] = theta.detach()[0].item<double>();
    }
  });
  // Round 0 averages the pairs {0, 1} and {2, 3}: 0.5 and 6.5; round 1 the pairs {0, 2} and {1, 3}.
  CHECK(after_one == std::vector<double>{0.5, 0.5, 6.5, 6.5});
  for (int r = 0; r < k; ++r) CHECK(after_two[r] == doctest::Approx(3.5).epsilon(1e-12));  // (0+1+4+9)/4
}

TEST_CASE("moshpit: on a one-dimensional grid every round is FedAvg's all-reduce, and on two it is not") {
  const OptimizerConfig adamw = [] {
    OptimizerConfig o;
    o.lr = 3e-3;
    return o;
  }();
  const Outcome line = train(spec_from("{name: moshpit, inner_steps: 4, grid_dims: 1}"), 4, 12, adamw);
  const Outcome fedavg = train(spec_from("{name: fedavg, inner_steps: 4}"), 4, 12, adamw);
  CHECK(max_abs_diff(line.params, fedavg.params) < 1e-6);
  const Outcome grid = train(spec_from("{name: moshpit, inner_steps: 4}"), 4, 12, adamw);
  CHECK(max_abs_diff(grid.params, fedavg.params) > 1e-5);
  CHECK(grid.eval_loss_end < grid.eval_loss_start);
}

TEST_CASE("moshpit: its keys are strict") {
  const MoshpitConfig c = std::any_cast<const MoshpitConfig&>(spec_from("{name: moshpit}").config);
  CHECK(c.inner_steps == 50);
  CHECK(c.grid_dims == 2);
  CHECK(c.grid_size == 0);
  CHECK_THROWS_WITH(spec_from("{name: moshpit, grid_size: 1}"), doctest::Contains("grid_size"));
  CHECK_THROWS_WITH(spec_from("{name: moshpit, grid_dims: 0}"), doctest::Contains("grid_dims"));
  CHECK_THROWS_WITH(spec_from("{name: moshpit, grid_dim: 2}"), doctest::Contains("grid_dim"));
}
