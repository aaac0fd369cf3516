// The quorum syncer: its config, the syncer's window rule (quorum, adaptive grace window, every live
// learner in) and its token-weighted merge against hand computations, the end of the run, and, on the
// in-process transport, the reduction to synchronous DiLoCo.
#include "algorithms/quorum_syncer.hpp"

#include "algorithms/policy_test_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

namespace {

QuorumSyncerConfig quorum_config(const std::string& yaml) {
  return std::any_cast<const QuorumSyncerConfig&>(spec_from("name: quorum_syncer\n" + yaml).config);
}

std::vector<torch::Tensor> push(double g, double steps) {
  return {torch::full({3}, g), torch::tensor({steps}, torch::kFloat64)};
}

double server_theta(ParameterServer& server, int rank) { return server.reply(rank)[0][0].item<double>(); }

const std::vector<int> kThree = {0, 1, 2};

}  // namespace

TEST_CASE("quorum syncer: entries parse with their defaults and reject bad values with file and line") {
  const QuorumSyncerConfig c = quorum_config("");
  CHECK(c.inner_steps == 24);
  CHECK(c.outer_lr == 0.7);
  CHECK(c.outer_momentum == 0.9);
  CHECK(c.quorum == 0);
  CHECK(c.grace_factor == 1);
  CHECK(c.grace_max_s == 0);
  CHECK_FALSE(c.wait_for_merge);
  CHECK(c.wire == WireFormat::fp32);
  CHECK_THROWS_WITH(spec_from("name: quorum_syncer\nquorum: -1\n"), doctest::Contains("quorum"));
  CHECK_THROWS_WITH(spec_from("name: quorum_syncer\ngrace_factor: -0.5\n"), doctest::Contains("grace_factor"));
  CHECK_THROWS_WITH(spec_from("name: quorum_syncer\ngrace_s: 1\n"), doctest::Contains("unknown key"));
  CHECK_THROWS_WITH(spec_from("name: quorum_syncer\nwait_for_merge: maybe\n"), doctest::Contains("test.yaml:2"));
}

TEST_CASE("quorum syncer: a window merges once the quorum is in and its grace window has passed, weighted by tokens") {
  // K 3, q 2, η 0.5, μ 0.9, G = 1 × the mean gap between arrivals (ḡ ← (ḡ + gap) / 2).
  const QuorumSyncerConfig c = quorum_config("quorum: 2\nouter_lr: 0.5\nouter_momentum: 0.9\n");
  auto syncer = make_quorum_server(c, {torch::zeros({3})}, 3, 100);
  syncer->arrive(0, push(1, 4), 0.0, kThree);
  CHECK(syncer->deadline_s() == std::numeric_limits<double>::infinity());  // no quorum yet
  CHECK(server_theta(*syncer, 0) == 0);  // replied at once: nothing merged
  syncer->arrive(1, push(3, 2), 1.0, kThree);  // the quorum: ḡ = 1, so the window ends at 1 + 1
  CHECK(syncer->deadline_s() == 2.0);
  CHECK(server_theta(*syncer, 1) == 0);
  syncer->tick(1.5, kThree);
  CHECK_FALSE(syncer->merged(0));
  // Rank 2 arrives after the grace window: the window merged at 2.0 without it.
  syncer->arrive(2, push(5, 4), 3.0, kThree);
  CHECK(syncer->merged(0));
  CHECK(syncer->merged(1));
  CHECK_FALSE(syncer->merged(2));
  double delta = (4 * 1 + 2 * 3) / 6.0;  // Σ n_m·g_m / Σ n_m
  double m = delta;
  double theta = -0.5 * (delta + 0.9 * m);
  CHECK(server_theta(*syncer, 2) == doctest::Approx(theta));  // version 1
  // ḡ = (1 + 2) / 2; rank 0 (last replied at version 0) completes the quorum at 3.5: ḡ = (1.5 + 0.5) / 2,
  // the window would end at 4.5, but rank 1 comes at 4.0 and every live learner is in.
  syncer->arrive(0, push(2, 4), 3.5, kThree);
  CHECK(syncer->deadline_s() == 4.5);
  syncer->arrive(1, push(-1, 4), 4.0, kThree);
  CHECK(syncer->merged(2));
  delta = (4 * 5 + 4 * 2 + 4 * -1) / 12.0;
  m = 0.9 * m + delta;
  theta -= 0.5 * (delta + 0.9 * m);
  CHECK(server_theta(*syncer, 0) == doctest::Approx(theta));
  const auto& u = syncer->updates();
  REQUIRE(u.size() == 5);
  CHECK(u[0].time_s == 2.0);
  CHECK(u[0].worker == 0);
  CHECK(u[1].worker == 1);
  CHECK(u[1].steps == 2);
  CHECK(u[1].version == 1);
  // The second window, in rank order: each pushed what it trained from version 0, its last reply before
  // its push (rank 2's first reply came after it): one merge since.
  CHECK(u[2].time_s == 4.0);
  CHECK(u[2].worker == 0);
  CHECK(u[2].staleness == 1);
  CHECK(u[3].worker == 1);
  CHECK(u[3].staleness == 1);
  CHECK(u[4].worker == 2);
  CHECK(u[4].staleness == 1);
  CHECK(u[4].version == 2);
}

TEST_CASE("quorum syncer: the quorum is at most the live learners, and the grace window has a cap") {
  const QuorumSyncerConfig c = quorum_config("quorum: 3\ngrace_factor: 10\ngrace_max_s: 0.25\n");
  auto syncer = make_quorum_server(c, {torch::zeros({3})}, 3, 100);
  // Rank 1 is gone: ranks 0 and 2 are every live learner.
  syncer->arrive(0, push(1, 4), 0.0, {0, 2});
  CHECK_FALSE(syncer->merged(0));
  syncer->arrive(2, push(1, 4), 1.0, {0, 2});
  CHECK(syncer->merged(0));
  CHECK(syncer->merged(2));
  // All three back, a quorum of 3 among them; with ḡ = 1, G = min(10 × ḡ, 0.25).
  syncer->arrive(0, push(1, 4), 2.0, kThree);
  syncer->arrive(1, push(1, 4), 3.0, kThree);
  CHECK(syncer->deadline_s() == std::numeric_limits<double>::infinity());  // 2 of 3
  // A learner lost while the window is open: the rule, checked again, finds every live learner in.
  syncer->tick(3.5, {0, 1});
  CHECK(syncer->merged(0));
  CHECK(syncer->merged(1));
  auto capped = make_quorum_server(c, {torch::zeros({3})}, 3, 100);
  capped->arrive(0, push(1, 4), 0.0, kThree);
  capped->arrive(1, push(1, 4), 1.0, kThree);
  capped->arrive(2, push(1, 4), 2.0, kThree);  // merged: all in
  capped->arrive(0, push(1, 4), 3.0, kThree);
  capped->arrive(1, push(1, 4), 4.0, kThree);
  capped->arrive(1, push(1, 4), 5.0, kThree);  // two of rank 1's pushes are not two learners
  CHECK_FALSE(capped->merged(0));
  const QuorumSyncerConfig two = quorum_config("quorum: 2\ngrace_factor: 10\ngrace_max_s: 0.25\n");
  auto quick = make_quorum_server(two, {torch::zeros({3})}, 3, 100);
  quick->arrive(0, push(1, 4), 0.0, kThree);
  quick->arrive(1, push(1, 4), 1.0, kThree);  // ḡ = 1: G = min(10, 0.25)
  CHECK(quick->deadline_s() == 1.25);
  quick->tick(1.25, kThree);
  CHECK(quick->merged(0));
  CHECK(quick->updates().back().time_s == 1.25);
}

TEST_CASE("quorum syncer: the window merges at once when the run's work is in, and replies tell learners to stop") {
  const QuorumSyncerConfig c = quorum_config("quorum: 2\n");
  auto syncer = make_quorum_server(c, {torch::zeros({3})}, 2, 5);  // 2 learners × 5 steps
  syncer->arrive(0, push(1, 4), 0.0, {0, 1});
  CHECK_FALSE(syncer->done());
  auto reply = syncer->reply(0);
  CHECK(reply.back()[1].item<double>() == 0);
  syncer->arrive(0, push(1, 6), 1.0, {0, 1});  // 10 steps in: done, one learner in the window
  CHECK(syncer->done());
  CHECK(syncer->merged(0));
  reply = syncer->reply(0);
  CHECK(reply.back()[0].item<double>() == 1);  // version
  CHECK(reply.back()[1].item<double>() == 1);  // stop
  CHECK(syncer->stopped(0));
  CHECK_FALSE(syncer->stopped(1));
  syncer->arrive(1, push(1, 4), 2.0, {0, 1});  // a push after the end is merged on its own
  CHECK(syncer->merged(1));
  CHECK(syncer->reply(1).back()[0].item<double>() == 2);
  CHECK(syncer->stopped(1));
}

TEST_CASE("quorum syncer: with a quorum of every learner, each waiting for the merge, identical learners train DiLoCo") {
  // Each window holds one push of every learner with equal steps: Δ is their mean and the merge is
  // DiLoCo's outer Nesterov step. Equal up to rounding (the mean is summed as Σ g_m / K).
  const OptimizerConfig opt = plain_sgd(0.05);
  Outcome sync = train(spec_from("name: diloco\ninner_steps: 3\n"), 3, 12, opt);
  Outcome quorum = train(spec_from("name: quorum_syncer\ninner_steps: 3\nquorum: 3\nwait_for_merge: true\n"), 3, 12, opt);
  CHECK(max_abs_diff(sync.params, quorum.params) < 1e-5);
  // Learners that take the syncer's state at once train on stale models: another algorithm.
  Outcome free = train(spec_from("name: quorum_syncer\ninner_steps: 3\nquorum: 3\n"), 3, 12, opt);
  CHECK(max_abs_diff(sync.params, free.params) > 1e-4);
}
