// Membership: losses from SimGrid's host state, joins through a handover at the group's next
// handover point (or from the last checkpoint when no one is left), downloads as real flows.
#include "sim/membership.hpp"

#include <simgrid/s4u.hpp>
#include <torch/serialize/archive.h>

#include <algorithm>
#include <sstream>

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
  if (fresh) {
    w.running = true;
    w.loop->run(0);
  } else {
    join(rank);
    if (!w.running) return;  // the run ended while it waited
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
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), rank), waiting_.end());
  tickets_.erase(rank);
  if (world_.in_group[rank]) leave_group(world_, rank);
  // Joiners waiting on a group that just emptied restore its last checkpoint instead.
  if (first_running() < 0) {
    for (int j : waiting_) actors_[j]->resume();
  }
}

void Membership::join(int rank) {
  SimWorker& w = workers_[rank];
  if (w.away_since_s < 0) w.away_since_s = sg4::Engine::get_clock();
  waiting_.push_back(rank);
  sg4::Mailbox* box = sg4::Mailbox::by_name("join-" + std::to_string(rank));
  while (true) {
    if (!tickets_.count(rank) && first_running() < 0 && checkpoint_) {
      // No one left to download from: the group resumes from its last checkpoint, kept by the relay
      // (downloaded from it) or, without a relay, on each worker's own disk (no transfer).
      admit_waiting(checkpoint_, world_.relay ? static_cast<int>(workers_.size()) : -1, world_.relay);
    }
    auto ticket = tickets_.find(rank);
    if (ticket == tickets_.end()) {
      sg4::this_actor::suspend();  // until admitted (handover_point) or the group empties (lose)
      continue;
    }
    if (ticket->second.source < 0) break;
    try {
      box->get<int>();  // the message stands for the state; its size is what the links carry
      break;
    } catch (const simgrid::Exception&) {  // the source was lost during the download: wait again
      tickets_.erase(rank);
      if (world_.in_group[rank]) leave_group(world_, rank);
      waiting_.push_back(rank);
    }
  }
  const Ticket ticket = tickets_.at(rank);
  tickets_.erase(rank);
  const double now = sg4::Engine::get_clock();
  std::istringstream in(ticket.snapshot->state);
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  w.policy->load(archive);
  w.transport->rejoin(ticket.snapshot->next_collective);
  Recorder& recorder = *world_.recorder;
  const double bytes = ticket.source < 0 ? 0 : static_cast<double>(ticket.snapshot->state.size()) * wire_scale_;
  recorder.event({rank, EventKind::join, ticket.sent_at_s, now, bytes, ticket.source});
  recorder.event({rank, EventKind::away, w.away_since_s, now, 0, -1});
  w.away_since_s = -1;
  ++joined_;
  w.running = true;
  w.loop->run(ticket.snapshot->steps_done);
}

int Membership::first_running() const {
  for (size_t r = 0; r < workers_.size(); ++r) {
    if (world_.in_group[r] && workers_[r].running) return static_cast<int>(r);
  }
  return -1;
}

std::shared_ptr<const GroupSnapshot> Membership::snapshot(int rank, int64_t steps_done) const {
  torch::serialize::OutputArchive archive;
  workers_[rank].policy->save(archive);
  std::ostringstream out;
  archive.save_to(out);
  auto snap = std::make_shared<GroupSnapshot>();
  snap->state = out.str();
  snap->steps_done = steps_done;
  snap->next_collective = workers_[rank].transport->next_collective();
  return snap;
}

void Membership::handover_point(int rank, int64_t steps_done) {
  if (!can_fail_ || rank != first_running()) return;
  checkpoint_ = snapshot(rank, steps_done);
  if (waiting_.empty()) return;
  // Joiners take part from the group's next collective on: if a member has already started it,
  // they are admitted at the next handover point instead.
  if (world_.in_flight.count(checkpoint_->next_collective)) return;
  admit_waiting(checkpoint_, rank, world_.hosts[rank]);
}

void Membership::admit_waiting(const std::shared_ptr<const GroupSnapshot>& snapshot, int source, sg4::Host* host) {
  const double now = sg4::Engine::get_clock();
  for (int rank : waiting_) {
    world_.in_group[rank] = true;
    tickets_[rank] = Ticket{snapshot, source, now};
    actors_[rank]->resume();
    if (host == nullptr) continue;  // read locally
    // The download: a message of the state's size from the source's host, while the source goes on.
    const double bytes = static_cast<double>(snapshot->state.size()) * wire_scale_;
    sg4::Actor::create("handover-to-" + std::to_string(rank), host, [rank, bytes] {
      static int token = 0;
      try {
        sg4::Mailbox::by_name("join-" + std::to_string(rank))->put(&token, static_cast<uint64_t>(bytes));
      } catch (const simgrid::Exception&) {  // the joiner was lost: nothing to deliver
      }
    });
  }
  waiting_.clear();
}

void Membership::end_if_over() {
  for (size_t r = 0; r < workers_.size(); ++r) {
    if (workers_[r].running) return;
  }
  over_ = true;
  for (int rank : waiting_) actors_[rank]->kill();
}

void Membership::close(double end_s) {
  for (size_t r = 0; r < workers_.size(); ++r) {
    SimWorker& w = workers_[r];
    if (w.away_since_s >= 0) world_.recorder->event({static_cast<int>(r), EventKind::away, w.away_since_s, end_s, 0, -1});
  }
}

}  // namespace locosim
