// CO2 (arXiv 2401.16265): τ local steps, then a heavy-ball outer step on the averaged outer gradient
// with the staleness-gap penalty and outer-momentum clipping. By default the average is waited on at
// once, as the released code does; `delay: 1` overlaps it with the next τ steps, as the paper describes.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/policy_registry.hpp"
#include "algorithms/tensor_fwd.hpp"
#include "algorithms/train_config.hpp"
#include "algorithms/wire_format.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;

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

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline Co2Config Co2Config::parse(Section& s) {
  Co2Config c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  c.outer_lr = s.number("outer_lr", c.outer_lr, Range::open_closed(0, kMaxOuterLr));
  c.outer_momentum = s.number("outer_momentum", c.outer_momentum, Range::closed_open(0, 1));
  c.penalty = s.choice("penalty", {"gap", "none"}, "gap") == "gap" ? Co2Penalty::gap : Co2Penalty::none;
  // λ divides the averaged progress: far below 1e-3 it overflows, far above 1e3 nothing moves.
  if (c.penalty == Co2Penalty::gap) c.gap_penalty = s.number("gap_penalty", c.gap_penalty, Range::closed(1e-3, 1e3));
  // 0 turns clipping off; outer momenta are parameter-sized, so above 1e6 a clip never bites.
  c.momentum_clip = s.number("momentum_clip", c.momentum_clip, Range::closed(0, 1e6));
  c.delay = s.integer("delay", c.delay, Range::closed(0, 1));
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry co2_policy() {
  return policy_entry<Co2Config>({
      .name = "co2",
      .paper = "arXiv 2401.16265",
      .sync_period = [](const Co2Config& c) -> std::optional<SyncPeriod> { return SyncPeriod{"inner_steps", c.inner_steps}; },
      .reads_clock = [](const Co2Config&) { return false; },
      .collective = [](const Co2Config&) { return RoundCollective::all_reduce; },
      .handover = "delay: 0, at the end of a period as DiLoCo; delay: 1, none (a sync is always in flight)",
      .on_failed_collective = "the failed period's sync is skipped, not redone",
      .bytes_per_round = "2(K−1)/K · P · b every τ steps",
      .example = "{name: co2, inner_steps: 3}",
  });
}

}  // namespace locosim
