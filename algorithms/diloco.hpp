// DiLoCo (arXiv 2311.08105): H inner optimizer steps, then an outer step (Nesterov by default, SGD or
// Adam as the paper's Figure 6 ablates) on the averaged, optionally pruned, pseudo-gradient. Config
// defaults are the paper's.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

// How long a round lasts. `steps`: every worker does H inner steps (the paper's rule; the fastest waits
// for the slowest). `fastest`: the round lasts as long as the fastest member's H steps, measured each
// round. `seconds`: it lasts round_s. In both timed rounds every worker does as many steps as fit,
// and the pseudo-gradients are averaged weighted by each worker's tokens.
enum class DiLoCoRound { steps, fastest, seconds };

// The outer optimizer (the paper's Figure 6: Nesterov beats SGD, i.e. FedAvg, and Adam). All three are
// torch's own: `nesterov` SGD with Nesterov momentum μ, `sgd` SGD with heavy-ball momentum μ (μ 0 and
// η 1: FedAvg), `adam` Adam with betas and eps (the paper: outer Adam needs a large eps, 0.1).
enum class DiLoCoOuter { nesterov, sgd, adam };
// How the trimmed Δ_i of a pruned round are combined: the plain mean over the members (the paper's
// Table 6) or TIES's elected-sign disjoint mean (its appendix: "slightly worse").
enum class DiLoCoPruneMerge { mean, ties };

const std::vector<std::string>& diloco_outer_names();  // "nesterov", "sgd", "adam"

struct DiLoCoConfig {
  int64_t inner_steps = 500;            // H: inner steps between synchronisations
  DiLoCoRound round = DiLoCoRound::steps;
  double round_s = 0;                   // the round's length, read only with round: seconds
  DiLoCoOuter outer = DiLoCoOuter::nesterov;  // Alg. 1's; `nesterov: false` (older scenarios) is sgd
  double outer_lr = 0.7;                // η: outer learning rate (the paper tunes it per outer optimizer)
  double outer_momentum = 0.9;          // μ: outer momentum (nesterov, sgd)
  double outer_beta1 = 0.9;             // Adam's β1, β2 (outer_betas): torch's defaults; the paper's
  double outer_beta2 = 0.999;           //   were not retrieved
  double outer_eps = 0.1;               // Adam's ε: the paper's note: at 1e-8 every value would move by about η a round,
                                        //   whatever the size of its Δ
  // The fraction of each tensor's pseudo-gradient values a worker drops before sending (Table 6: 25%,
  // 50%, 75%): TIES trimming (outer_prune.hpp), then merged by prune_merge. 0: the plain all-reduce.
  double prune = 0;
  DiLoCoPruneMerge prune_merge = DiLoCoPruneMerge::mean;  // read (and recorded) with prune > 0 only
  WireFormat wire = WireFormat::fp32;   // pseudo-gradient on the wire (OpenDiLoCo: fp16)

  static DiLoCoConfig parse(Section& s);
};

std::unique_ptr<Policy> make_diloco(const DiLoCoConfig& cfg, PolicyContext ctx);

// Its registry entry (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry diloco_policy();

}  // namespace locosim
