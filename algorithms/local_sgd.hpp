// What the Local-SGD methods share (DiLoCo and its timed rounds, Streaming DiLoCo's fragments, CO2,
// asynchronous DiLoCo's workers): the anchor θ a round starts from, the pseudo-gradient Δ_i = θ − θ_i,
// an outer optimizer stepping θ along the averaged Δ (nesterov | sgd | adam), the restart θ_i ← θ, and
// saving all of it for a worker that joins. Each worker's inner optimizer is make_optimizer's
// (optim.hpp). On the meta device (a timing-only run) the anchor holds no values and does no
// arithmetic: Δ is tensors of its shapes, made once, and an outer step only gives the optimizer its
// state's shapes (what a joiner downloads).
#pragma once
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/outer_config.hpp"

namespace torch::serialize {
class OutputArchive;
class InputArchive;
}  // namespace torch::serialize

namespace locosim {

std::unique_ptr<torch::optim::Optimizer> make_outer_optimizer(const std::vector<torch::Tensor>& theta,
                                                              const OuterConfig& cfg);

class Anchor {
 public:
  // θ ← a copy of `params`. With `outer`, outer_step() applies that optimizer; without, the owner
  // moves θ by its own rule (theta()).
  explicit Anchor(const std::vector<torch::Tensor>& params, const std::optional<OuterConfig>& outer = std::nullopt);

  // Δ_i = θ − θ_i for this worker's `params` (new tensors: the caller may send them as they are).
  std::vector<torch::Tensor> pseudo_gradient(const std::vector<torch::Tensor>& params);
  // θ ← Outer(θ, Δ̄). REQUIRES: an outer optimizer.
  void outer_step(const std::vector<torch::Tensor>& mean_delta);
  // θ_i ← θ.
  void restart(const std::vector<torch::Tensor>& params) const;

  std::vector<torch::Tensor>& theta() { return theta_; }
  const std::vector<torch::Tensor>& theta() const { return theta_; }
  // Whether θ holds values (false on the meta device: a timing-only run). Kept from construction (θ's
  // tensors never move to another device): asked several times a round, where reading it off θ's first
  // tensor fetched that tensor's record, cold on a swarm's every worker.
  bool values() const { return values_; }

  // θ under `prefix`, and the outer optimizer's state under `outer_prefix` (if it has one).
  void save(torch::serialize::OutputArchive& archive, const std::string& prefix, const std::string& outer_prefix) const;
  void load(torch::serialize::InputArchive& archive, const std::string& prefix, const std::string& outer_prefix);

 private:
  std::vector<torch::Tensor> theta_;
  bool values_ = true;
  std::unique_ptr<torch::optim::Optimizer> outer_;
  std::vector<torch::Tensor> shapes_;  // timing only: meta tensors of Δ's shapes, shared by every anchor of θ's shapes
};

}  // namespace locosim
