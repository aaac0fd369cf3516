// Moshpit SGD, Ryabinin, Gorbunov, Plokhotnyuk & Pekhimenko 2021 (arXiv 2103.03239): Local SGD whose
// parameters are averaged by Moshpit All-Reduce, in groups that change from round to round.
//
//   every step:        θ_i ← InnerOpt(θ_i, ∇L_i)
//   every τ steps t:   a   ← t mod d                                the axis of this round
//                      G   ← the ranks in i's row along axis a       (the cells that differ from i's in a only)
//                      θ_i ← (1/|G|) Σ_{j∈G} θ_j                    one all-reduce among G
//
// On a full grid (K = M^d) every round averages M workers and d rounds average all K exactly: after
// the first round each row holds its mean, the second averages those means, and so on (the paper's
// Moshpit All-Reduce). The paper forms the groups by matchmaking through a DHT, keyed by each peer's
// place in its earlier groups; on a full grid that is the same as turning the axis. Its authors'
// averaging simulation (moshpit-sgd, averaging_experiments/averager.py) places the peers in distinct random
// cells and averages along iteration mod d; here rank r is in cell r, the same grid up to a relabelling
// when M^d = K. A worker lost mid-round leaves its group smaller, not the others waiting.
// Wire per worker per round: a ring all-reduce of P values among its group of M, 2(M−1)/M · P · b
// bytes each way, on the routes between the group's hosts.
#include "algorithms/moshpit.hpp"

#include "algorithms/policy.hpp"

namespace locosim {

std::vector<int> moshpit_group(int64_t round, int rank, int world_size, int64_t grid_dims, int64_t grid_size) {
  int64_t side = grid_size;
  if (side == 0) {  // the smallest M with M^d >= K
    const auto cells = [&](int64_t m) {
      int64_t n = 1;
      for (int64_t a = 0; a < grid_dims && n < world_size; ++a) n *= m;
      return n;
    };
    for (side = 1; cells(side) < world_size;) ++side;
  }
  const int64_t axis = round % grid_dims;
  const bool last = axis + 1 == grid_dims;  // the last axis is as long as the ranks need
  int64_t stride = 1;                         // M^axis: one step along the axis
  for (int64_t a = 0; a < axis; ++a) stride *= side;
  // The row's first cell: rank's cell with its coordinate on the axis set to 0.
  const int64_t coordinate = last ? rank / stride : rank / stride % side;
  const int64_t first = rank - coordinate * stride;
  std::vector<int> group;
  for (int64_t c = 0; (last || c < side) && first + c * stride < world_size; ++c) {
    group.push_back(static_cast<int>(first + c * stride));
  }
  return group;
}

std::vector<std::vector<int>> moshpit_groups(int64_t round, int world_size, int64_t grid_dims, int64_t grid_size) {
  std::vector<std::vector<int>> groups;
  for (int r = 0; r < world_size; ++r) {
    std::vector<int> group = moshpit_group(round, r, world_size, grid_dims, grid_size);
    if (group.front() == r) groups.push_back(std::move(group));  // each row once, by its first rank
  }
  return groups;
}

namespace {

class Moshpit : public Policy {
 public:
  Moshpit(const MoshpitConfig& cfg, PolicyContext ctx)
      : cfg_(cfg), ctx_(std::move(ctx)), inner_(make_optimizer(ctx_.params, ctx_.optimizer)) {}

  // Commit or redo among the group's survivors; a round given up keeps each member's own θ_i (no outer
  // state to protect: the next round averages again, along the next axis).
  Sync step(int64_t step) override {
    optimizer_step(*inner_, ctx_.params, ctx_.optimizer, step, ctx_.total_steps);
    if ((step + 1) % cfg_.inner_steps != 0) return Sync::none;
    const int64_t t = (step + 1) / cfg_.inner_steps - 1;
    const std::vector<int> group =
        moshpit_group(t, ctx_.transport->rank(), ctx_.transport->world_size(), cfg_.grid_dims, cfg_.grid_size);
    std::vector<torch::Tensor> theta;  // views of θ_i: the group's mean is written back into the model
    for (const auto& p : ctx_.params) theta.push_back(p.detach());
    const Wire wire{cfg_.wire, ctx_.wire_scale};
    return commit_or_redo([&] { return ctx_.transport->all_reduce_mean_among(group, theta, wire); })
               ? Sync::committed
               : Sync::aborted;
  }

  // After a round nothing is in flight, but the workers' parameters differ: a joiner takes the donor's
  // θ and inner optimizer state, and joins the donor's turn of the axes (the round count is the step's).
  bool handover_ready() const override { return true; }
  void save(torch::serialize::OutputArchive& archive) const override {
    save_tensors(archive, "params", ctx_.params);
    save_optimizer(archive, "inner", *inner_);
  }
  void load(torch::serialize::InputArchive& archive) override {
    load_tensors(archive, "params", ctx_.params);
    load_optimizer(archive, "inner", *inner_);
  }

 private:

  MoshpitConfig cfg_;
  PolicyContext ctx_;
  std::unique_ptr<torch::optim::Optimizer> inner_;  // kept across rounds, as FedAvg's
};

}  // namespace

std::unique_ptr<Policy> make_moshpit(const MoshpitConfig& cfg, PolicyContext ctx) {
  return std::make_unique<Moshpit>(cfg, std::move(ctx));
}

}  // namespace locosim
