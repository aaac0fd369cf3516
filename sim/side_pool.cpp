#include "sim/side_pool.hpp"

#include <simgrid/s4u.hpp>

#include <utility>

namespace sg4 = simgrid::s4u;

namespace locosim {

struct SidePool::Kept {
  sg4::ActorPtr actor;
  sg4::Host* host = nullptr;
  std::function<void()> side;  // the side to run next; empty while idle
  std::shared_ptr<SideRun> run;
};

SidePool::SidePool() = default;
SidePool::~SidePool() = default;

// A kept actor's life: the sides it is handed, one after another, until the pool closes. It is idle
// again before it wakes the rank waiting on its side, so that rank's next side may go to it.
void SidePool::serve(Kept& kept) {
  while (true) {
    while (!kept.side && !closing_) sg4::this_actor::suspend();
    if (!kept.side) return;  // closing, and nothing left to run
    const std::function<void()> side = std::exchange(kept.side, nullptr);
    const std::shared_ptr<SideRun> run = std::exchange(kept.run, nullptr);
    side();
    idle_[kept.host].push_back(&kept);
    run->done = true;
    if (run->waiter) std::exchange(run->waiter, nullptr)->resume();
  }
}

std::pair<sg4::ActorPtr, std::shared_ptr<SideRun>> SidePool::run(sg4::Host* host, std::function<void()> side) {
  auto run = std::make_shared<SideRun>();
  std::vector<Kept*>& idle = idle_[host];
  if (!idle.empty()) {
    Kept* kept = idle.back();
    idle.pop_back();
    kept->side = std::move(side);
    kept->run = run;
    kept->actor->resume();
    return {kept->actor, run};
  }
  all_.push_back(std::make_unique<Kept>());
  Kept* kept = all_.back().get();
  kept->host = host;
  kept->side = std::move(side);
  kept->run = run;
  // A side only drives SimGrid comms; SimGrid 3.32's set_stacksize takes KiB. Kept for the run, the
  // stacks are made once per host, not per side: 64 MiB of address space each, a few pages of memory.
  constexpr unsigned kStackKiB = 64 * 1024;
  kept->actor =
      sg4::Actor::init("side-" + host->get_name(), host)->set_stacksize(kStackKiB)->start([this, kept] { serve(*kept); });
  return {kept->actor, run};
}

void SidePool::wait(const std::shared_ptr<SideRun>& run) {
  while (!run->done) {  // resumed by the kept actor when the side ends
    run->waiter = sg4::Actor::self();
    sg4::this_actor::suspend();
  }
}

void SidePool::close() {
  if (closing_) return;
  closing_ = true;
  for (const auto& kept : all_) {
    if (!kept->side) kept->actor->resume();  // idle; a busy one ends after its side
  }
}

}  // namespace locosim
