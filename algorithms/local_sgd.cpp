// The anchor and outer optimizer of the Local-SGD methods (see local_sgd.hpp).
#include "algorithms/local_sgd.hpp"

#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>

#include <map>
#include <mutex>
#include <tuple>

#include "algorithms/optim.hpp"
#include "algorithms/policy.hpp"

namespace locosim {

std::unique_ptr<torch::optim::Optimizer> make_outer_optimizer(const std::vector<torch::Tensor>& theta,
                                                              const OuterConfig& cfg) {
  if (cfg.rule == OuterRule::adam) {
    return std::make_unique<torch::optim::Adam>(
        theta, torch::optim::AdamOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).eps(cfg.eps));
  }
  const bool nesterov = cfg.rule == OuterRule::nesterov && cfg.momentum > 0;
  return std::make_unique<torch::optim::SGD>(theta,
                                             torch::optim::SGDOptions(cfg.lr).momentum(cfg.momentum).nesterov(nesterov));
}

Anchor::Anchor(const std::vector<torch::Tensor>& params, const std::optional<OuterConfig>& outer) {
  for (const auto& p : params) {
    // A meta tensor has no values to copy (timing only): a new one of its shape is the copy, made in
    // one call where detach and clone were two copies of its metadata and a copy of nothing.
    torch::Tensor copy = p.is_meta() ? torch::empty_like(p) : p.detach().clone();
    theta_.push_back(outer ? copy.requires_grad_(true) : copy);
  }
  values_ = theta_.empty() || !theta_.front().is_meta();
  if (outer) outer_ = make_outer_optimizer(theta_, *outer);
}

namespace {

// Timing only: meta tensors of these tensors' shapes, one set for every anchor whose θ has the same
// shapes, strides and types. A meta tensor holds no values and Δ is only read, so the workers may
// share it: a swarm's thousands of workers then fetch one set of tensors each round, where a set of
// their own each was thousands of objects brought back from memory (its reference counts, its sizes).
std::vector<torch::Tensor> shared_meta_like(const std::vector<torch::Tensor>& like) {
  using Shape = std::tuple<std::vector<int64_t>, std::vector<int64_t>, c10::ScalarType>;
  static std::mutex mutex;
  static std::map<std::vector<Shape>, std::vector<torch::Tensor>> sets;
  std::vector<Shape> key;
  for (const auto& t : like) key.emplace_back(t.sizes().vec(), t.strides().vec(), t.scalar_type());
  const std::lock_guard<std::mutex> lock(mutex);
  auto [it, added] = sets.try_emplace(std::move(key));
  if (added) {
    for (const auto& t : like) it->second.push_back(torch::empty_like(t));
  }
  return it->second;
}

}  // namespace

std::vector<torch::Tensor> Anchor::pseudo_gradient(const std::vector<torch::Tensor>& params) {
  if (!values()) {
    if (shapes_.empty()) shapes_ = shared_meta_like(theta_);
    return shapes_;
  }
  std::vector<torch::Tensor> delta;
  for (size_t i = 0; i < theta_.size(); ++i) delta.push_back(theta_[i].detach() - params[i].detach());
  return delta;
}

void Anchor::outer_step(const std::vector<torch::Tensor>& mean_delta) {
  if (step_changes_nothing(*outer_, theta_)) return;
  for (size_t i = 0; i < theta_.size(); ++i) theta_[i].mutable_grad() = mean_delta[i];
  locosim::outer_step(*outer_, theta_);
}

void Anchor::restart(const std::vector<torch::Tensor>& params) const {
  if (!values()) return;
  for (size_t i = 0; i < theta_.size(); ++i) params[i].detach().copy_(theta_[i].detach());
}

void Anchor::save(torch::serialize::OutputArchive& archive, const std::string& prefix,
                  const std::string& outer_prefix) const {
  save_tensors(archive, prefix, theta_);
  if (outer_) save_optimizer(archive, outer_prefix, *outer_);
}

void Anchor::load(torch::serialize::InputArchive& archive, const std::string& prefix, const std::string& outer_prefix) {
  load_tensors(archive, prefix, theta_);
  if (outer_) load_optimizer(archive, outer_prefix, *outer_);
}

}  // namespace locosim
