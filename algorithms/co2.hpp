// CO2 (arXiv 2401.16265): local steps with the all-reduce of one period overlapped with the next
// period's computation; a one-period-stale outer momentum step with staleness-gap penalty and
// outer-momentum clipping.
#pragma once
#include <memory>
#include <vector>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

// The staleness-gap penalty's form. `gap`: the released code's (weigao266/fairscale-CO2 co2.py) form,
// the averaged outer gradient divided by λ before it enters the momentum. `none`: no penalty.
// The paper's per-coordinate Λ_t could be added here as another form.
enum class Co2Penalty { gap, none };

struct Co2Config {
  int64_t inner_steps = 48;           // τ: local steps per period (the code's outer_frequency default)
  double outer_lr = 1.0;              // α: outer learning rate
  double outer_momentum = 0.5;        // β: outer (heavy-ball) momentum
  Co2Penalty penalty = Co2Penalty::gap;
  double gap_penalty = 1.0;           // λ: read only with penalty: gap
  double momentum_clip = 1.0;         // φ: the outer momentum is clamped to [−φ, φ]; 0 turns clipping off
  int64_t delay = 1;                  // periods between an all-reduce's start and its use: 1 (CO2) or 0 (wait at once)
  WireFormat wire = WireFormat::fp32; // the code all-reduces fp32

  static Co2Config parse(Section& s);
};

// One outer step, in place, on every tensor: m ← β·m + Δ̄/λ (Δ̄ alone with penalty none);
// m ← clamp(m, −φ, φ) unless φ = 0; θ ← θ − α·m. delta_mean is the averaged outer gradient.
void co2_outer_step(const Co2Config& cfg, std::vector<torch::Tensor>& anchor, std::vector<torch::Tensor>& momentum,
                    const std::vector<torch::Tensor>& delta_mean);

std::unique_ptr<Policy> make_co2(const Co2Config& cfg, PolicyContext ctx);

}  // namespace locosim
