// Steps as marks on the clock: a timing-only worker's steps between two of its calls on the network,
// on a host whose speed never changes, cost SimGrid no activity and no context switch each: the
// worker is suspended once for the whole run of steps, and resumed when the last one ends, at exactly
// the simulated time its exec would have ended.
//
// SimGrid's CPU model ends an exec of f flops started at t at the date t + f / speed (the host's
// whole speed: one worker per host, and nothing else computes there), or earlier: at the first stop
// of the clock within its precision (surf/precision) of that date, when another event falls that
// close before it. A mark does the same arithmetic and ends by the same rule, checked at every stop
// (Engine::on_time_advance); a timer at its date keeps that date a stop of the clock, as the exec's end
// would be for the other activities. The tests (sim/step_marks_test.cpp) run the same steps as execs
// beside the marks and compare their ends bit for bit.
#pragma once

#include <memory>
#include <vector>

namespace simgrid::s4u {
class Host;
}

namespace locosim {

// One step as SimGrid's exec of `flops` on the calling actor's host, from now; returns when it ends.
void execute_here(double flops);

class StepMarks {
 public:
  // After the engine is configured (it reads surf/precision); lives as long as the engine runs.
  StepMarks();
  ~StepMarks();

  // In a worker's actor, on `host` (its own; its speed never changes): steps of `flops` one after the
  // other from now. Returns when the last has ended, with each step's end in `ends` (resized). The
  // actor is suspended meanwhile: it must not be waiting on anything else.
  void run(simgrid::s4u::Host* host, const std::vector<double>& flops, std::vector<double>& ends);

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the clock's callback, which outlives the run
};

}  // namespace locosim
