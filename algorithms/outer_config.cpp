// A policy's outer-optimizer keys (outer_config.hpp), read strictly.
#include "algorithms/outer_config.hpp"

#include <optional>

#include "algorithms/train_config.hpp"
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

}  // namespace locosim
