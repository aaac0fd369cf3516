// The anchor and outer optimizer of the Local-SGD methods (see local_sgd.hpp).
#include "algorithms/local_sgd.hpp"

#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>

#include "algorithms/optim.hpp"
#include "algorithms/policy.hpp"
#include "config/section.hpp"

namespace locosim {

const std::vector<std::string>& outer_rule_names() {
  static const std::vector<std::string> names = {"nesterov", "sgd", "adam"};
  return names;
}

OuterConfig OuterConfig::parse(Section& s, const OuterConfig& defaults) {
  OuterConfig c = defaults;
  std::optional<bool> nesterov;
  if (s.has("nesterov")) nesterov = s.flag("nesterov");
  const std::string implied =
      nesterov ? (*nesterov ? "nesterov" : "sgd") : outer_rule_names()[static_cast<size_t>(defaults.rule)];
  const std::string outer = s.choice("outer", outer_rule_names(), implied);
  if (nesterov && outer != implied) {
    s.fail("nesterov", "nesterov: " + std::string(*nesterov ? "true" : "false") + " contradicts outer: " + outer +
                           " (nesterov: true is outer: nesterov, false is outer: sgd); write outer: alone");
  }
  c.rule = outer == "sgd" ? OuterRule::sgd : outer == "adam" ? OuterRule::adam : OuterRule::nesterov;
  c.lr = s.number("outer_lr", c.lr, Range::open_closed(0, kMaxOuterLr));
  if (c.rule == OuterRule::adam) {
    if (s.has("outer_momentum")) {
      s.fail("outer_momentum", "is read by outer: nesterov | sgd; outer: adam takes outer_betas and outer_eps");
    }
    std::vector<double> betas = s.numbers("outer_betas", 2, std::vector<double>{c.beta1, c.beta2}, Range::closed_open(0, 1));
    c.beta1 = betas[0];
    c.beta2 = betas[1];
    // Adam divides by sqrt(v) + ε; the paper's outer Adam needs ε as large as 0.1, past 10 it is SGD.
    c.eps = s.number("outer_eps", c.eps, Range::open_closed(0, 10));
  } else {
    for (const char* key : {"outer_betas", "outer_eps"}) {
      if (s.has(key)) s.fail(key, "is read by outer: adam only, not outer: " + outer);
    }
    c.momentum = s.number("outer_momentum", c.momentum, Range::closed_open(0, 1));
  }
  return c;
}

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
