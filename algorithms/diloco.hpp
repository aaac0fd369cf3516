// DiLoCo (arXiv 2311.08105): H inner optimizer steps, then an outer Nesterov step on the averaged
// pseudo-gradient. Config defaults are the paper's.
#pragma once
#include <memory>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

// How long a round lasts. `steps`: every worker does H inner steps (the paper's rule; the fastest waits
// for the slowest). `fastest`: the round lasts as long as the fastest member's H steps, measured each
// round. `seconds`: it lasts round_s. In both timed rounds every worker does as many steps as fit,
// and the pseudo-gradients are averaged weighted by each worker's tokens.
enum class DiLoCoRound { steps, fastest, seconds };

struct DiLoCoConfig {
  int64_t inner_steps = 500;            // H: inner steps between synchronisations
  DiLoCoRound round = DiLoCoRound::steps;
  double round_s = 0;                   // the round's length, read only with round: seconds
  double outer_lr = 0.7;                // η: outer learning rate
  double outer_momentum = 0.9;          // μ: outer momentum
  bool nesterov = true;                 // Nesterov momentum (Alg. 1); false gives heavy-ball
  WireFormat wire = WireFormat::fp32;   // pseudo-gradient on the wire (OpenDiLoCo: fp16)

  static DiLoCoConfig parse(Section& s);
};

std::unique_ptr<Policy> make_diloco(const DiLoCoConfig& cfg, PolicyContext ctx);

}  // namespace locosim
