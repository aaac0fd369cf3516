// Commit or redo: every policy facing failed collectives (Pending::wait() false), one worker alone on
// a transport that fails the collectives it is told to. A redone collective gives exactly the run
// without the failure; a sync given up leaves the outer state as it was, never half-applied.
#include <torch/serialize/archive.h>
#include <torch/utils.h>

#include <set>
#include <sstream>

#include "algorithms/ddp.hpp"
#include "algorithms/policy_test_util.hpp"
#include "tests/doctest_torch.hpp"

namespace locosim {
// For doctest's messages on vectors of Sync.
std::ostream& operator<<(std::ostream& os, Sync s) { return os << (s == Sync::none ? "none" : sync_name(s)); }
}  // namespace locosim

using namespace locosim;
using namespace locosim::policy_test;

namespace {

// One worker alone (the mean of one contribution is itself); the collectives whose 0-based call
// number is in `failing` fail, leaving their tensors untouched.
class FailingTransport : public Transport {
 public:
  std::set<int> failing;
  int calls = 0;

  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  double now_s() const override { return 0; }
  void compute(double, const std::function<void()>& work) override { work(); }
  Pending all_reduce_mean(std::vector<torch::Tensor>&, Wire) override { return outcome(); }
  Pending all_gather(const std::vector<torch::Tensor>& mine, double, std::vector<std::vector<torch::Tensor>>& out) override {
    out = {mine};  // alone, what arrives is its own payload, on failure too
    return outcome();
  }

 private:
  Pending outcome() {
    const bool ok = failing.count(calls++) == 0;
    return Pending([ok] { return ok; });
  }
};

struct Run {
  std::vector<torch::Tensor> params;
  std::vector<Sync> syncs;
};

// `steps` steps of `yaml`'s policy with fixed pseudo-random gradients; the collectives numbered in
// `failing` fail.
Run run(const std::string& yaml, int steps, std::set<int> failing) {
  torch::manual_seed(0);
  TinyLlama model(tiny_config());
  FailingTransport t;
  t.failing = std::move(failing);
  PolicyContext ctx{model->parameters(), &t, plain_sgd(0.05), steps, 1.0};
  auto policy = make_policy(spec_from(yaml), ctx);
  Run r;
  torch::manual_seed(1);
  for (int step = 0; step < steps; ++step) {
    for (auto& p : model->parameters()) p.mutable_grad() = torch::randn_like(p);
    r.syncs.push_back(policy->step(step));
  }
  policy->finish();
  for (const auto& p : model->parameters()) r.params.push_back(p.detach().clone());
  return r;
}

std::vector<torch::Tensor> initial_params() {
  torch::manual_seed(0);
  TinyLlama model(tiny_config());
  std::vector<torch::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.detach().clone());
  return out;
}

bool same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("commit: a collective that fails once is redone: the run is the run without the failure") {
  for (const char* yaml : {"name: ddp\n", "{name: diloco, inner_steps: 2}\n", "{name: fedavg, inner_steps: 2}\n"}) {
    CAPTURE(yaml);
    const Run clean = run(yaml, 4, {});
    const Run redone = run(yaml, 4, {0});  // the first collective fails, its redo completes
    CHECK(same(redone.params, clean.params));
    CHECK(redone.syncs == clean.syncs);
    CHECK(redone.syncs[1] == Sync::committed);
  }
}

TEST_CASE("commit: ddp gives up a step after three failed attempts: no replica applies it") {
  const Run clean = run("name: ddp\n", 1, {});
  CHECK_FALSE(same(clean.params, initial_params()));
  // One all-reduce after the backward: calls 0, 1, 2 are its three attempts.
  const Run aborted = run("{name: ddp, overlap: false}\n", 1, {0, 1, 2});
  CHECK(aborted.syncs == std::vector<Sync>{Sync::aborted});
  CHECK(same(aborted.params, initial_params()));  // the step never happened
  // In buckets: calls 0 .. B-1 are the buckets' all-reduces, then the redos of the failed ones. The
  // first bucket failing three times gives the step up, though the others completed.
  const std::string small_buckets = "{name: ddp, first_bucket_mb: 0.001, bucket_mb: 0.01}\n";
  std::vector<double> bytes;
  for (const auto& p : initial_params()) bytes.push_back(4.0 * static_cast<double>(p.numel()));
  DdpConfig cfg;
  cfg.first_bucket_mb = 0.001;
  cfg.bucket_mb = 0.01;
  const int buckets = static_cast<int>(ddp_buckets(bytes, cfg).size());
  REQUIRE(buckets >= 2);
  CHECK(run("name: ddp\n", 1, {0, 1, 2}).syncs == std::vector<Sync>{Sync::aborted});  // one bucket, as above
  const Run bucketed = run(small_buckets, 1, {0, buckets, buckets + 1});
  CHECK(bucketed.syncs == std::vector<Sync>{Sync::aborted});
  CHECK(same(bucketed.params, initial_params()));
  const Run redone = run(small_buckets, 1, {0, buckets});  // the third attempt completes
  CHECK(redone.syncs == std::vector<Sync>{Sync::committed});
  CHECK(same(redone.params, clean.params));
}

TEST_CASE("commit: diloco gives up a round: the outer parameters and momentum are those of before it") {
  // Round 1 (steps 1-2) commits; round 2 (steps 3-4) fails three times and is given up: every
  // worker ends it back on θ after round 1, exactly, as in a run that stopped after round 1.
  const std::string yaml = "{name: diloco, inner_steps: 2}\n";
  const Run aborted = run(yaml, 4, {1, 2, 3});
  const Run one_round = run(yaml, 2, {});
  CHECK(aborted.syncs == std::vector<Sync>{Sync::none, Sync::committed, Sync::none, Sync::aborted});
  CHECK(same(aborted.params, one_round.params));  // θ untouched by the failed round

  // Training goes on after it: the next round commits.
  const Run after = run(yaml, 6, {1, 2, 3});
  CHECK(after.syncs[5] == Sync::committed);
  CHECK_FALSE(same(after.params, aborted.params));
}

TEST_CASE("commit: fedavg gives up a round: each worker keeps its own parameters") {
  const Run aborted = run("{name: fedavg, inner_steps: 2}\n", 2, {0, 1, 2});
  const Run clean = run("{name: fedavg, inner_steps: 2}\n", 2, {});
  CHECK(aborted.syncs[1] == Sync::aborted);
  CHECK(same(aborted.params, clean.params));  // alone, the mean is its own θ: nothing else changes
}

TEST_CASE("commit: co2 and streaming diloco skip a failed round without touching the outer state") {
  // CO2 without delay: a period whose all-reduce fails leaves the anchor where it was; the local
  // parameters restart from it. One worker: a failed first period ends back at the initial weights.
  const Run co2 = run("{name: co2, inner_steps: 2, delay: 0}\n", 2, {0});
  CHECK(co2.syncs[1] == Sync::aborted);
  CHECK(same(co2.params, initial_params()));
  // Streaming DiLoCo with one fragment and no delay: its failed sync applies nothing, and the local
  // fragment is kept as it is (the next sync averages it).
  const std::string streaming = "{name: streaming_diloco, inner_steps: 2, fragments: 1, sync_delay: 0}\n";
  const Run skipped = run(streaming, 2, {0});
  CHECK(skipped.syncs[1] == Sync::aborted);
  CHECK_FALSE(same(skipped.params, initial_params()));
  CHECK_FALSE(same(skipped.params, run(streaming, 2, {}).params));
}

TEST_CASE("commit: a policy's handover state makes a fresh worker identical to the group") {
  for (const char* yaml : {"name: ddp\n", "{name: diloco, inner_steps: 2}\n", "{name: fedavg, inner_steps: 2}\n",
                           "{name: demo, topk: 4}\n", "{name: co2, inner_steps: 2}\n"}) {
    CAPTURE(yaml);
    torch::manual_seed(0);
    TinyLlama donor_model(tiny_config());
    FailingTransport t;
    auto donor = make_policy(spec_from(yaml), {donor_model->parameters(), &t, plain_sgd(0.05), 8, 1.0});
    REQUIRE(donor->handover_ready());
    torch::manual_seed(1);
    for (int step = 0; step < 2; ++step) {
      for (auto& p : donor_model->parameters()) p.mutable_grad() = torch::randn_like(p);
      donor->step(step);
    }
    torch::serialize::OutputArchive out;
    donor->save(out);
    std::ostringstream bytes;
    out.save_to(bytes);

    torch::manual_seed(7);  // other initial weights: the joiner's own are overwritten
    TinyLlama joiner_model(tiny_config());
    auto joiner = make_policy(spec_from(yaml), {joiner_model->parameters(), &t, plain_sgd(0.05), 8, 1.0});
    std::istringstream in(bytes.str());
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    joiner->load(archive);
    std::vector<torch::Tensor> a, b;
    for (const auto& p : donor_model->parameters()) a.push_back(p.detach());
    for (const auto& p : joiner_model->parameters()) b.push_back(p.detach());
    CHECK(same(a, b));
    // And both take the same next steps (DeMo's residual δ is each worker's own: a joiner starts at 0).
    if (std::string(yaml).find("demo") != std::string::npos) continue;
    torch::manual_seed(2);
    std::vector<torch::Tensor> grads;
    for (auto& p : donor_model->parameters()) grads.push_back(torch::randn_like(p));
    for (int step = 2; step < 4; ++step) {
      for (size_t i = 0; i < grads.size(); ++i) {
        donor_model->parameters()[i].mutable_grad() = grads[i].clone();
        joiner_model->parameters()[i].mutable_grad() = grads[i].clone();
      }
      donor->step(step);
      joiner->step(step);
    }
    CHECK(same(a, b));
  }
}
