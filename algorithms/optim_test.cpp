// optimizer_step and outer_step on the meta device (a timing-only run's parameters): the first step
// gives an optimizer its state's shapes, what a joining worker downloads; no step runs at all while
// nothing reads that state (MetaStateUnread).
#include "algorithms/optim.hpp"
#include "algorithms/policy_test_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

namespace {

std::vector<torch::Tensor> meta_params() {
  TinyLlama model(tiny_config());
  auto params = model->parameters();  // as sim/simulate.cpp makes a timing-only run's
  for (auto& p : params) {
    p = torch::empty(p.sizes(), p.options().device(torch::kMeta)).requires_grad_();
    p.mutable_grad() = torch::empty_like(p);
  }
  return params;
}

// The inner AdamW and an outer Nesterov SGD, each stepped twice.
std::pair<size_t, size_t> states_after_two_steps(const std::vector<torch::Tensor>& params) {
  const OptimizerConfig cfg;
  auto inner = make_optimizer(params, cfg);
  torch::optim::SGD outer(params, torch::optim::SGDOptions(0.7).momentum(0.9).nesterov(true));
  for (int64_t step = 0; step < 2; ++step) {
    optimizer_step(*inner, params, cfg, step, 10);
    outer_step(outer, params);
  }
  return {inner->state().size(), outer.state().size()};
}

}  // namespace

TEST_CASE("optim: on the meta device the first step gives the state its shapes, and none runs while nothing reads it") {
  const auto params = meta_params();
  CHECK(states_after_two_steps(params) == std::pair{params.size(), params.size()});
  {
    MetaStateUnread unread;
    CHECK(states_after_two_steps(params) == std::pair<size_t, size_t>{0, 0});
  }
  CHECK(states_after_two_steps(params) == std::pair{params.size(), params.size()});  // read again once it is gone
}
