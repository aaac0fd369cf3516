#include "sim/step_marks.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <simgrid/simix.hpp>
#include <xbt/config.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sg4 = simgrid::s4u;
using simgrid::kernel::timer::Timer;

namespace locosim {

// this_actor::execute(flops), in two simcalls instead of five: SimGrid 3.32 hands each of its setters
// (flops, host, priority) and the start to the maestro in a simcall of its own, a scheduling sub-round
// each, for every worker at every step. Here the maestro runs them in one; the activity, its owner (the
// calling actor, which Exec::init records) and the simulated time it takes are the same.
void execute_here(double flops) {
  sg4::Host* host = sg4::this_actor::get_host();
  const sg4::ExecPtr exec = sg4::Exec::init();
  simgrid::kernel::actor::simcall_answered(
      [&exec, host, flops] { exec->set_flops_amount(flops)->set_host(host)->set_priority(1.0)->vetoable_start(); });
  exec->wait();
}

struct StepMarks::State {
  // One worker's run of steps: its actor, suspended until the last step's mark is due.
  struct Chain {
    sg4::Actor* actor = nullptr;
    double speed = 0;
    const std::vector<double>* flops = nullptr;  // the caller's, as long as the run lasts
    std::vector<double>* ends = nullptr;
    size_t step = 0;  // the step running now, as a mark
  };

  double precision = simgrid::config::get_value<double>("surf/precision");
  // The marks by date, each date's in the order they were made. Workers in step share dates: a
  // date's marks are one node, where a heap of marks took a logarithm of the workers per step.
  std::map<double, std::vector<Chain*>> marks;
  std::vector<Chain*> ended;
  std::string broken;  // a mark the clock passed (a bug): run() throws it
  // The clock's next stop for the marks: one timer, at the earliest mark's date. Every mark is the
  // earliest before the clock reaches its date, so the clock stops at each mark's date, as it would
  // with a timer per mark, and SimGrid keeps one timer where it kept thousands.
  Timer* stop = nullptr;
  double stop_date = 0;

  // Marks the step `c` runs now at its date: start + flops / speed, as the CPU model computes it.
  void mark(Chain& c, double now) { marks[now + (*c.flops)[c.step] / c.speed].push_back(&c); }

  // After the marks changed at `now`: the timer at the earliest one's date. One that is due runs and
  // goes (Timer::execute_all); one that is not and marks nothing any more is removed.
  void keep_stop(double now) {
    if (stop && !marks.empty() && stop_date == marks.begin()->first) return;
    if (stop && stop_date > now) stop->remove();
    stop = nullptr;
    if (marks.empty()) return;
    stop_date = marks.begin()->first;
    stop = Timer::set(stop_date, [] {});
  }

  // At every stop of the clock, after the models ended what they end now: the CPU model ends an
  // action whose date is within its precision of now (CpuModel::update_actions_state_lazy), and so do
  // the marks. A step that starts now is marked after, as its exec would be made after.
  void on_time_advance() {
    if (marks.empty()) return;
    const double now = sg4::Engine::get_clock();
    ended.clear();
    while (!marks.empty() && marks.begin()->first - now < precision) {
      const double date = marks.begin()->first;
      if (!(std::fabs(date - now) < precision) && broken.empty()) {
        broken = "step marks: the clock passed a step's end (" + std::to_string(date) + " s) to " +
                 std::to_string(now) + " s";
      }
      const std::vector<Chain*>& due = marks.begin()->second;
      ended.insert(ended.end(), due.begin(), due.end());
      marks.erase(marks.begin());
    }
    for (Chain* c : ended) {
      (*c->ends)[c->step] = now;
      if (++c->step == c->flops->size()) {
        c->actor->resume();  // from the maestro: in the list of actors to run, as an activity's end puts it
      } else {
        mark(*c, now);
      }
    }
    keep_stop(now);  // an early end leaves no stop at its date
  }
};

StepMarks::StepMarks() : state_(std::make_shared<State>()) {
  std::shared_ptr<State> state = state_;
  sg4::Engine::on_time_advance_cb([state](double /*delta_s*/) { state->on_time_advance(); });
}

StepMarks::~StepMarks() = default;

void StepMarks::run(sg4::Host* host, const std::vector<double>& flops, std::vector<double>& ends) {
  ends.assign(flops.size(), 0);
  if (flops.empty()) return;
  State::Chain c;
  c.actor = sg4::Actor::self();
  c.speed = host->get_speed();
  c.flops = &flops;
  c.ends = &ends;
  // No simcall before the suspension: the actors run one at a time on the maestro's thread, and the
  // marks and the timer are plain data. The clock's callback resumes the actor when its last step
  // ends: one scheduling round per run of steps, and no activity at all.
  state_->mark(c, sg4::Engine::get_clock());
  state_->keep_stop(sg4::Engine::get_clock());
  sg4::this_actor::suspend();
  if (!state_->broken.empty()) throw std::logic_error(state_->broken);
  if (c.step != flops.size()) {  // resumed by someone else: a bug that would end the steps early
    for (auto& [date, due] : state_->marks) due.erase(std::remove(due.begin(), due.end(), &c), due.end());
    throw std::logic_error("step marks: a worker was resumed at " + std::to_string(sg4::Engine::get_clock()) +
                           " s, before its last step ended");
  }
}

}  // namespace locosim
