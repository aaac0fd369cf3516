// DiLoCo (arXiv 2311.08105): H inner optimizer steps, then an outer Nesterov step on the averaged
// pseudo-gradient. Config defaults are the paper's.
#pragma once
#include <memory>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

struct DiLoCoConfig {
  int64_t inner_steps = 500;            // H: inner steps between synchronisations
  double outer_lr = 0.7;                // η: outer learning rate
  double outer_momentum = 0.9;          // μ: outer momentum
  bool nesterov = true;                 // Nesterov momentum (Alg. 1); false gives heavy-ball
  WireFormat wire = WireFormat::fp32;   // pseudo-gradient on the wire (OpenDiLoCo: fp16)

  static DiLoCoConfig parse(Section& s);
};

std::unique_ptr<Policy> make_diloco(const DiLoCoConfig& cfg, PolicyContext ctx);

}  // namespace locosim
