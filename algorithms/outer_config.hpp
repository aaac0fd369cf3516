// The outer optimizer of the Local-SGD methods (DiLoCo and the methods built on its rounds): its rule
// and settings, as a policy's keys read them. No LibTorch (local_sgd.hpp builds the optimizer).
#pragma once
#include <string>
#include <vector>

namespace locosim {

class Section;

// The outer optimizers of DiLoCo's Figure 6, all torch's own: `nesterov` SGD with Nesterov momentum μ
// (at μ 0 it is sgd), `sgd` heavy ball (μ 0 and η 1: FedAvg), `adam` with betas and eps.
enum class OuterRule { nesterov, sgd, adam };
const std::vector<std::string>& outer_rule_names();  // "nesterov", "sgd", "adam"

struct OuterConfig {
  OuterRule rule = OuterRule::nesterov;
  double lr = 0.7;         // η
  double momentum = 0.9;   // μ (nesterov, sgd)
  double beta1 = 0.9;      // Adam's β1, β2 (outer_betas)
  double beta2 = 0.999;
  double eps = 0.1;        // Adam's ε

  // Reads `outer` (nesterov | sgd | adam; the older `nesterov: true | false` means nesterov | sgd, both
  // given must agree), `outer_lr`, and `outer_momentum` or, for adam only, `outer_betas` and
  // `outer_eps`; absent keys keep `defaults`.
  static OuterConfig parse(Section& s, const OuterConfig& defaults);
};

}  // namespace locosim
