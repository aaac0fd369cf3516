// Timed rounds, for uneven hardware (DiLoCo's `round: fastest | seconds`): a round lasts a time budget
// B instead of H steps, and each worker does the n_i steps that fit (a step is begun only if the last
// one's duration still fits before the deadline). With round: fastest, B = H × the fastest member's
// mean step time of the previous round; the first round learns it from an all-gather after each
// worker's first step (the round's clock starts again after that wait). The pseudo-gradients are then
// averaged weighted by tokens, as FedAvg weights clients by their data: before the all-reduce the
// members all-gather (n_i, mean step time of the round), 16 bytes each, and each scales its Δ_i by
// n_i·k / Σ n_j. On identical GPUs every worker does H steps a round.
#pragma once
#include <cstdint>

#include "algorithms/diloco.hpp"
#include "algorithms/transport.hpp"

namespace locosim {

class RoundClock {
 public:
  // REQUIRES: kind is fastest or seconds (round_s > 0 for seconds).
  RoundClock(DiLoCoRound kind, int64_t inner_steps, double round_s, Transport& transport);

  // The learning-rate schedule's step for the next step of round `round`: round·H + min(j, H − 1),
  // j the steps done in the round.
  int64_t schedule_step(int64_t round) const;
  // After a step: times it (learning the first budget after the run's first step, round: fastest) and
  // says whether another step fits in the round. A transport without a clock, whose steps take no
  // time, times its rounds in steps.
  bool another_fits();
  // All-gathers every member's (steps, mean step time) of this round; sets `weight` to n_i·k / Σ n_j
  // and, for round: fastest, the next round's budget. False if the all-gather failed.
  bool token_weight(double& weight);
  void start_round();

  double budget_s() const { return budget_s_; }
  void set_budget_s(double budget_s) { budget_s_ = budget_s; }

 private:
  void learn_budget(double step_s);
  void set_budget(double fastest_step_s);

  DiLoCoRound kind_;
  int64_t inner_steps_;
  Transport& transport_;
  double budget_s_;              // B; 0 until learnt (round: fastest), −1 if there is no clock
  double round_start_s_ = 0;
  double step_end_s_ = 0;        // when the last step ended (or the round began)
  int64_t steps_in_round_ = 0;
  double round_compute_s_ = 0;   // this round's steps, start to end
};

}  // namespace locosim
