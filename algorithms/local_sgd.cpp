// The anchor and outer optimizer of the Local-SGD methods (see local_sgd.hpp).
#include "algorithms/local_sgd.hpp"

#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>

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
    theta_.push_back(outer ? p.detach().clone().requires_grad_(true) : p.detach().clone());
  }
  if (outer) outer_ = make_outer_optimizer(theta_, *outer);
}

std::vector<torch::Tensor> Anchor::pseudo_gradient(const std::vector<torch::Tensor>& params) {
  if (!values()) {
    if (shapes_.empty()) {
      for (const auto& t : theta_) shapes_.push_back(torch::empty_like(t));
    }
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
