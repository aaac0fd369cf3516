// Membership: losses from SimGrid's host state, joins through a handover at the group's next
// handover point (or from the last checkpoint when no one is left), downloads as real flows.
#include "sim/membership.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>

#include "scenario/worker.hpp"

namespace sg4 = simgrid::s4u;

namespace locosim {

Membership::Membership(SimWorld& world, std::vector<SimWorker>& workers, double wire_scale, bool can_fail)
    : world_(world), workers_(workers), wire_scale_(wire_scale), can_fail_(can_fail), actors_(workers.size()) {
  world_.in_group.assign(workers_.size(), true);
  world_.agree_on_commit = can_fail;
  for (size_t r = 0; r < world_.hosts.size(); ++r) rank_of_[world_.hosts[r]] = static_cast<int>(r);
  // Everyone starts from the same weights: that is the group's state until its first handover point.
  if (can_fail_ && workers_[0].policy->handover_ready()) checkpoint_ = snapshot(0, 0);
}

void Membership::run_worker(int rank) {
  SimWorker& w = workers_[rank];
  actors_[rank] = sg4::Actor::self();
  if (over_ || w.done) return;
  const bool fresh = !w.started && sg4::Engine::get_clock() == 0;
  w.started = true;
  try {
    if (fresh) {
      w.running = true;
      w.loop->run(0);
    } else {
      join(rank);
      if (!w.running) return;  // the run ended while it waited
    }
  } catch (const CutOff& e) {  // it can no longer reach the server: lost, as if its host had failed
    cut_off_.push_back(e.what());
    lose(rank);
    end_if_over();
    return;
  }
  w.running = false;
  w.done = true;
  world_.in_group[rank] = false;  // it takes part in no later collective
  end_if_over();
}

void Membership::host_changed(const sg4::Host& host) {
  auto it = rank_of_.find(&host);
  if (it == rank_of_.end() || host.is_on() || over_) return;
  if (!workers_[it->second].done) lose(it->second);
}

// Runs in maestro, as the host goes off (SimGrid kills the worker's actors with it).
void Membership::lose(int rank) {
  SimWorker& w = workers_[rank];
  const double now = sg4::Engine::get_clock();
  if (w.away_since_s < 0) {
    w.away_since_s = now;
    if (w.started) ++lost_;  // a worker off from the start was never there
  }
  if (w.running) w.loop->lose(now);
  w.running = false;
  joining_.erase(rank);
  ready_.erase(std::remove(ready_.begin(), ready_.end(), rank), ready_.end());
  tickets_.erase(rank);
  if (world_.in_group[rank]) leave_group(world_, rank);
  // Joiners ready to go in, on a group that just emptied, restore its last checkpoint instead.
  if (first_running() < 0) {
    for (int j : ready_) actors_[j]->resume();
  }
}

// A worker coming back first downloads the group's state, from the lowest running member (or, with
// no one left, from the relay, or its own disk), while the group goes on; then it waits for the
// group's next handover point, where it takes the state of that moment and goes in. The download is
// charged once, for the state's size; the few steps the group took meanwhile travel free (a joiner
// would fetch them as a small delta).
void Membership::join(int rank) {
  SimWorker& w = workers_[rank];
  if (w.away_since_s < 0) w.away_since_s = sg4::Engine::get_clock();
  joining_.insert(rank);
  if (!checkpoint_) {  // a policy that never hands over (Streaming DiLoCo, CO2 at delay 1, async DiLoCo): it stays out
    sg4::this_actor::suspend();
    return;
  }
  sg4::Mailbox* box = sg4::Mailbox::by_name("join-" + std::to_string(rank));
  while (true) {
    const int member = first_running();
    const int source = member >= 0 ? member : world_.relay ? static_cast<int>(workers_.size()) : -1;
    if (source < 0) {  // no one to download from: the checkpoint is on this worker's disk, read at no cost
      world_.recorder->event({rank, EventKind::join, sg4::Engine::get_clock(), sg4::Engine::get_clock(), 0, -1});
      break;
    }
    const double start_s = sg4::Engine::get_clock();
    const double bytes = checkpoint_->bytes * wire_scale_;
    // A daemon: if the joiner is lost before it takes the download, nothing waits for this one.
    sg4::Actor::create("handover-to-" + std::to_string(rank), member >= 0 ? world_.hosts[member] : world_.relay,
                       [box, bytes] {
                         static int token = 0;
                         try {
                           box->put(&token, static_cast<uint64_t>(bytes));
                         } catch (const simgrid::Exception&) {  // the joiner was lost: nothing to deliver
                         }
                       })
        ->daemonize();
    try {
      box->get<int>();  // the message stands for the state; its size is what the links carry
    } catch (const simgrid::Exception&) {  // the source was lost during the download: again
      continue;
    }
    world_.recorder->event({rank, EventKind::join, start_s, sg4::Engine::get_clock(), bytes, source});
    break;
  }
  ready_.push_back(rank);
  while (!tickets_.count(rank)) {
    if (first_running() < 0) {
      admit_ready(checkpoint_);  // no one left: the group resumes from its last checkpoint
    } else {
      sg4::this_actor::suspend();  // until a handover point admits it, or the group empties (lose)
    }
  }
  const std::shared_ptr<const GroupSnapshot> snapshot = tickets_.at(rank);
  tickets_.erase(rank);
  joining_.erase(rank);
  load_state(*w.policy, snapshot->state);
  w.transport->rejoin(snapshot->next_collective);
  world_.recorder->event({rank, EventKind::away, w.away_since_s, sg4::Engine::get_clock(), 0, -1});
  w.away_since_s = -1;
  ++joined_;
  w.running = true;
  w.loop->run(snapshot->steps_done);
}

int Membership::first_running() const {
  for (size_t r = 0; r < workers_.size(); ++r) {
    if (world_.in_group[r] && workers_[r].running) return static_cast<int>(r);
  }
  return -1;
}

std::shared_ptr<const GroupSnapshot> Membership::snapshot(int rank, int64_t steps_done) const {
  auto snap = std::make_shared<GroupSnapshot>();
  snap->state = saved_state(*workers_[rank].policy);
  snap->bytes = state_tensor_bytes(snap->state);
  snap->steps_done = steps_done;
  snap->next_collective = workers_[rank].transport->next_collective();
  return snap;
}

void Membership::handover_point(int rank, int64_t steps_done) {
  if (!can_fail_ || rank != first_running()) return;
  checkpoint_ = snapshot(rank, steps_done);
  // Joiners take part from the group's next collective on: if a member has already started it,
  // they are admitted at the next handover point instead.
  if (!ready_.empty() && !collective_started(world_, checkpoint_->next_collective)) admit_ready(checkpoint_);
}

void Membership::admit_ready(const std::shared_ptr<const GroupSnapshot>& snapshot) {
  for (int rank : ready_) {
    world_.in_group[rank] = true;
    tickets_[rank] = snapshot;
    actors_[rank]->resume();
  }
  ready_.clear();
}

void Membership::end_if_over() {
  for (size_t r = 0; r < workers_.size(); ++r) {
    if (workers_[r].running) return;
  }
  over_ = true;
  for (int rank : joining_) actors_[rank]->kill();
}

void Membership::close(double end_s) {
  for (size_t r = 0; r < workers_.size(); ++r) {
    SimWorker& w = workers_[r];
    if (w.away_since_s >= 0) world_.recorder->event({static_cast<int>(r), EventKind::away, w.away_since_s, end_s, 0, -1});
  }
}

}  // namespace locosim
