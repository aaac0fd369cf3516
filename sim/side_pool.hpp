// Actors kept for a whole run to carry the sides of collectives, one side after another.
//
// A collective's side (a rank's flows, or the relay's) runs in an actor of its own, so the rank can
// compute while its flows go on. Made per side, each is a context, a guarded stack (mmap, mprotect,
// munmap) and two simcalls to start and to end, for every worker at every collective: on a timing-only
// swarm that was the largest cost after SimGrid's scheduling. A kept actor instead waits suspended
// between sides; the rank that hands it a side resumes it (one simcall), and it resumes the rank
// waiting on that side when the side ends.
//
// Only for a world that never fails: a failed collective kills its sides' actors (fail_collective),
// and a killed kept actor would take later sides with it.
#pragma once
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include <simgrid/forward.h>

namespace locosim {

// A side handed to a kept actor: whether it has ended, and who waits for it.
struct SideRun {
  bool done = false;
  simgrid::s4u::ActorPtr waiter;  // suspended until done
};

class SidePool {
 public:
  SidePool();
  SidePool(const SidePool&) = delete;
  SidePool& operator=(const SidePool&) = delete;
  ~SidePool();

  // Runs `side` in an idle kept actor on `host`, or in a new one. Returns the actor that runs it
  // (its pid marks the collective's flows) and the run to wait on.
  std::pair<simgrid::s4u::ActorPtr, std::shared_ptr<SideRun>> run(simgrid::s4u::Host* host,
                                                                   std::function<void()> side);
  // Suspends the calling actor until `run`'s side has ended (at once if it has).
  static void wait(const std::shared_ptr<SideRun>& run);
  // Lets every kept actor end once it is idle: without this the engine would wait on them forever.
  // Call when the last worker is done. Idempotent.
  void close();

 private:
  struct Kept;
  void serve(Kept& kept);
  std::vector<std::unique_ptr<Kept>> all_;
  std::unordered_map<const simgrid::s4u::Host*, std::vector<Kept*>> idle_;
  bool closing_ = false;
};

}  // namespace locosim
