// CO2 (arXiv 2401.16265): τ local steps, then a heavy-ball outer step on the averaged outer gradient
// with the staleness-gap penalty and outer-momentum clipping. By default the average is waited on at
// once, as the released code does; `delay: 1` overlaps it with the next τ steps, as the paper describes.
#pragma once
#include <memory>
#include <vector>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

// The staleness-gap penalty's form. `gap`: the released code's (weigao266/fairscale-CO2 co2.py) form,
// the averaged outer gradient divided by a constant λ before it enters the momentum. `none`: no penalty.
// The paper's per-coordinate Λ_t could be added here as another form.
enum class Co2Penalty { gap, none };

struct Co2Config {
  int64_t inner_steps = 48;           // τ: local steps per period (the code's outer_frequency default)
  double outer_lr = 1.0;              // α: outer learning rate
  double outer_momentum = 0.5;        // β: outer heavy-ball momentum (the code's; its launcher: 0-0.6 by GPUs)
  Co2Penalty penalty = Co2Penalty::gap;
  double gap_penalty = 1.0;           // λ: read only with penalty: gap; 1 leaves Δ̄ as it is
  double momentum_clip = 1.0;         // φ: the outer momentum is clamped to [−φ, φ]; 0 turns clipping off
  // Periods between an all-reduce's start and its outer step. 0: waited on at once, as the released
  // code does at every setting its launcher exposes. 1: the paper's overlap with the next τ steps; the
  // step is then one period stale and, when a period's local progress is large, oscillates unless
  // α/λ < 1 − β (λ > 2 at the other defaults; docs/policies-streaming-co2-fedavg.md).
  int64_t delay = 0;
  WireFormat wire = WireFormat::fp32; // the code averages fp32 parameters

  static Co2Config parse(Section& s);
};

// One outer step, in place, on every tensor: m ← β·m + Δ̄/λ (Δ̄ alone with penalty none);
// m ← clamp(m, −φ, φ) unless φ = 0; θ ← θ − α·m. delta_mean is the averaged outer gradient.
void co2_outer_step(const Co2Config& cfg, std::vector<torch::Tensor>& anchor, std::vector<torch::Tensor>& momentum,
                    const std::vector<torch::Tensor>& delta_mean);

std::unique_ptr<Policy> make_co2(const Co2Config& cfg, PolicyContext ctx);

// Its registry entry (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry co2_policy();

}  // namespace locosim
