// DiLoCo's timed rounds (see round_clock.hpp).
#include "algorithms/round_clock.hpp"

#include <algorithm>

namespace locosim {

RoundClock::RoundClock(DiLoCoRound kind, int64_t inner_steps, double round_s, Transport& transport)
    : kind_(kind), inner_steps_(inner_steps), transport_(transport), budget_s_(round_s) {}

int64_t RoundClock::schedule_step(int64_t round) const {
  return round * inner_steps_ + std::min(steps_in_round_, inner_steps_ - 1);
}

bool RoundClock::another_fits() {
  const double now = transport_.now_s();
  const double step_s = now - step_end_s_;
  step_end_s_ = now;
  round_compute_s_ += step_s;
  ++steps_in_round_;
  if (budget_s_ == 0) learn_budget(step_s);  // round: fastest, first step of the run
  return step_s > 0 ? now + step_s <= round_start_s_ + budget_s_ * (1 + 1e-9)
                    : steps_in_round_ < inner_steps_;
}

bool RoundClock::token_weight(double& weight) {
  std::vector<std::vector<torch::Tensor>> all;
  const torch::Tensor mine = torch::tensor(
      {static_cast<double>(steps_in_round_), round_compute_s_ / static_cast<double>(steps_in_round_)}, torch::kFloat64);
  if (!transport_.all_gather({mine}, 16, all).wait()) return false;
  double steps = 0, members = 0, fastest_step_s = 0;
  for (const auto& a : all) {
    if (a.empty()) continue;
    const double n = a[0][0].item<double>(), step_s = a[0][1].item<double>();
    steps += n;
    members += 1;
    fastest_step_s = members == 1 ? step_s : std::min(fastest_step_s, step_s);
  }
  weight = static_cast<double>(steps_in_round_) * members / steps;
  if (kind_ == DiLoCoRound::fastest) set_budget(fastest_step_s);
  return true;
}

void RoundClock::learn_budget(double step_s) {
  std::vector<std::vector<torch::Tensor>> all;
  double fastest = step_s;  // alone if the all-gather failed: its own pace
  if (transport_.all_gather({torch::tensor({step_s}, torch::kFloat64)}, 8, all).wait()) {
    for (const auto& a : all) {
      if (!a.empty()) fastest = std::min(fastest, a[0][0].item<double>());
    }
  }
  set_budget(fastest);
  // The wait is not the round's: it restarts, this first step in it, at the pace of the others.
  step_end_s_ = transport_.now_s();
  round_start_s_ = step_end_s_ - step_s;
}

void RoundClock::set_budget(double fastest_step_s) {
  budget_s_ = fastest_step_s > 0 ? static_cast<double>(inner_steps_) * fastest_step_s : -1;
}

void RoundClock::start_round() {
  round_start_s_ = step_end_s_ = transport_.now_s();
  steps_in_round_ = 0;
  round_compute_s_ = 0;
}

}  // namespace locosim
