// Asynchronous DiLoCo: the server's outer rules against their formulas, DyLU, the end of the run,
// and, on the in-process transport (no clock: every window holds a push from every worker), the
// reduction to synchronous DiLoCo.
#include "algorithms/async_diloco.hpp"

#include "algorithms/policy_test_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

namespace {

AsyncDiLoCoConfig async_config(const std::string& yaml) {
  return std::any_cast<const AsyncDiLoCoConfig&>(spec_from("name: async_diloco\n" + yaml).config);
}

std::vector<torch::Tensor> push(double g, double steps, double step_s) {
  return {torch::full({3}, g), torch::tensor({steps, step_s}, torch::kFloat64)};
}

double theta_of(ParameterServer& server, int rank) { return server.reply(rank)[0][0].item<double>(); }

}  // namespace

TEST_CASE("async diloco: entries parse with the paper's defaults and reject bad values") {
  const AsyncDiLoCoConfig c = async_config("");
  CHECK(c.inner_steps == 50);
  CHECK(c.outer == AsyncOuter::delayed_nesterov);
  CHECK(c.delay == 0);
  CHECK(c.momentum_activation == 0);
  CHECK(c.dylu);
  CHECK(c.grace_s == 0);
  CHECK_THROWS_WITH(spec_from("name: async_diloco\nouter: adam\n"), doctest::Contains("outer"));
  CHECK_THROWS_WITH(spec_from("name: async_diloco\nouter: nesterov\ndelay: 4\n"), doctest::Contains("unknown key"));
  CHECK_THROWS_WITH(spec_from("name: async_diloco\ndelay: -1\n"), doctest::Contains("delay"));
  CHECK_THROWS_WITH(spec_from("name: async_diloco\ngrace_s: -1\n"), doctest::Contains("grace_s"));
  CHECK_THROWS_WITH(spec_from("name: async_diloco\ndylu: maybe\n"), doctest::Contains("test.yaml:2"));
}

TEST_CASE("async diloco: delayed Nesterov moves the momentum once every N pushes, on their mean") {
  // ε 0.5, β 0.9, N 2, c 0: push 1 (g=1) is a plain step of ε·g/N; push 2 (g=3) folds the mean of
  // both into m and steps by ε·(β·m + g/N).
  const AsyncDiLoCoConfig c = async_config("outer_lr: 0.5\nouter_momentum: 0.9\ndelay: 2\ndylu: false\n");
  auto server = make_async_server(c, {torch::zeros({3})}, 2, 100);
  server->apply(0, push(1, 5, 1), 0);
  double theta = -0.5 * 1 / 2;
  CHECK(theta_of(*server, 0) == doctest::Approx(theta));
  server->apply(1, push(3, 5, 1), 0);
  double m = (1 + 3) / 2.0;
  theta -= 0.5 * (0.9 * m + 3 / 2.0);
  CHECK(theta_of(*server, 1) == doctest::Approx(theta));
  // The next cycle: m ← β·m + b/N with the buffer emptied.
  server->apply(0, push(2, 5, 1), 0);
  theta -= 0.5 * 2 / 2.0;
  server->apply(0, push(2, 5, 1), 0);
  m = 0.9 * m + (2 + 2) / 2.0;
  theta -= 0.5 * (0.9 * m + 2 / 2.0);
  CHECK(theta_of(*server, 0) == doctest::Approx(theta));

  // c > 0: every push also takes c·β·m, and the cycle's last (1 − cN + c)·β·m.
  const AsyncDiLoCoConfig cc = async_config("outer_lr: 0.5\nouter_momentum: 0.9\ndelay: 2\nmomentum_activation: 0.25\n");
  auto with_c = make_async_server(cc, {torch::zeros({3})}, 2, 100);
  with_c->apply(0, push(1, 5, 1), 0);
  with_c->apply(1, push(3, 5, 1), 0);
  with_c->apply(0, push(2, 5, 1), 0);
  double t = -0.5 * (0.25 * 0.9 * 0 + 1 / 2.0);
  double mm = 0.9 * 0 + 2;
  t -= 0.5 * ((1 - 0.5 + 0.25) * 0.9 * mm + 3 / 2.0);
  t -= 0.5 * (0.25 * 0.9 * mm + 2 / 2.0);
  CHECK(theta_of(*with_c, 0) == doctest::Approx(t));
}

TEST_CASE("async diloco: plain Nesterov steps on every push") {
  const AsyncDiLoCoConfig c = async_config("outer_lr: 0.5\nouter_momentum: 0.9\nouter: nesterov\n");
  auto server = make_async_server(c, {torch::zeros({3})}, 2, 100);
  server->apply(0, push(1, 5, 1), 0);
  server->apply(1, push(3, 5, 1), 0);
  double m = 1, theta = -0.5 * (1 + 0.9 * m);
  m = 0.9 * m + 3;
  theta -= 0.5 * (3 + 0.9 * m);
  CHECK(theta_of(*server, 0) == doctest::Approx(theta));
}

TEST_CASE("async diloco: the server records staleness, sets each worker's H by its speed, and ends the run") {
  const AsyncDiLoCoConfig c = async_config("inner_steps: 10\n");
  auto server = make_async_server(c, {torch::zeros({3})}, 2, 15);  // 2 workers × 15 steps = 30
  server->apply(0, push(1, 10, 0.1), 1.0);   // the fast worker: 0.1 s a step
  auto fast = server->reply(0);
  CHECK(fast.back()[1].item<double>() == 10);  // H for the fastest
  server->apply(0, push(1, 10, 0.1), 2.0);
  (void)server->reply(0);
  server->apply(1, push(1, 10, 0.25), 2.5);  // the slow one: 2.5× slower, never replied to before
  auto slow = server->reply(1);
  CHECK(slow.back()[1].item<double>() == 4);  // ⌊10 · 0.1 / 0.25⌋
  CHECK(slow.back()[0].item<double>() == 3);  // version
  CHECK(slow.back()[2].item<double>() == 1);  // 30 steps in: done
  CHECK(server->done());
  const auto& u = server->updates();
  REQUIRE(u.size() == 3);
  CHECK(u[0].staleness == 0);
  CHECK(u[1].staleness == 0);  // worker 0 pushed from version 1, its last reply
  CHECK(u[2].staleness == 2);  // worker 1 pushed from version 0; two updates since
  CHECK(u[2].version == 3);
  CHECK(u[2].time_s == 2.5);
  CHECK(u[2].steps == 10);
}

TEST_CASE("async diloco: identical workers in windows of all K with delayed Nesterov over N = K is DiLoCo") {
  // Each window holds one push from every worker (no clock), so with N = K, c = 0 a cycle of the
  // server is a round of synchronous DiLoCo: θ ← θ − ε·(ḡ + β·(β·m + ḡ)). Equal up to rounding
  // (the mean is applied in K parts of g_k/K).
  const OptimizerConfig opt = plain_sgd(0.05);
  Outcome sync = train(spec_from("name: diloco\ninner_steps: 3\n"), 3, 12, opt);
  Outcome async = train(spec_from("name: async_diloco\ninner_steps: 3\n"), 3, 12, opt);
  CHECK(max_abs_diff(sync.params, async.params) < 1e-5);
  CHECK(max_abs_diff(sync.params, async.params) > 0);  // two implementations, not one
  // Plain Nesterov steps once per push: with K > 1 that is another algorithm.
  Outcome plain = train(spec_from("name: async_diloco\ninner_steps: 3\nouter: nesterov\n"), 3, 12, opt);
  CHECK(max_abs_diff(sync.params, plain.params) > 1e-3);
  // One worker: every rule is DiLoCo.
  Outcome one_sync = train(spec_from("name: diloco\ninner_steps: 3\n"), 1, 12, opt);
  Outcome one_plain = train(spec_from("name: async_diloco\ninner_steps: 3\nouter: nesterov\n"), 1, 12, opt);
  CHECK(max_abs_diff(one_sync.params, one_plain.params) < 1e-5);
}
