// SimTransport: compute charged as host FLOPs, collectives as flows in helper actors, membership and
// failures as SimGrid reports them (a failed host kills its actors; a cut link fails its comms). The
// parameter-server exchange is in server_exchange.cpp.
#include "sim/sim_transport.hpp"

#include <simgrid/s4u.hpp>
#include <simgrid/simix.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "algorithms/torch_time.hpp"
#include "sim/collectives.hpp"
#include "sim/side_pool.hpp"
#include "sim/step_marks.hpp"
#include "sim/step_pool.hpp"

namespace sg4 = simgrid::s4u;

namespace locosim {
namespace {

std::string g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::vector<int> SimWorld::members() const {
  if (in_group.empty()) return all_ranks(static_cast<int>(hosts.size()));
  std::vector<int> ranks;
  for (size_t r = 0; r < in_group.size(); ++r) {
    if (in_group[r]) ranks.push_back(static_cast<int>(r));
  }
  return ranks;
}

bool collective_started(const SimWorld& world, uint64_t seq) { return world.in_flight.count({false, seq}) > 0; }

void fail_collective(SimWorld& world, const CollectiveId& id) {
  auto it = world.in_flight.find(id);
  if (it == world.in_flight.end() || it->second.failed) return;
  SimCollective& c = it->second;
  c.failed = true;
  c.failed_at_s = sg4::Engine::get_clock();
  const aid_t self = sg4::Actor::self() ? sg4::this_actor::get_pid() : -1;
  for (aid_t pid : c.flows) {
    if (pid == self) continue;
    if (sg4::ActorPtr actor = sg4::Actor::by_pid(pid)) actor->kill();
  }
}

// Forgets a collective every member has read (or left): a subgroup's leaves its group's index too,
// and a group with none in flight leaves the index (NoLoCo draws new pairs every round).
static void erase_collective(SimWorld& world, const CollectiveId& id) {
  auto it = world.in_flight.find(id);
  if (it == world.in_flight.end()) return;
  if (id.subgroup) {
    auto open = world.subgroups_open.find(it->second.named);
    if (open != world.subgroups_open.end()) {
      auto& serials = open->second;
      serials.erase(std::remove(serials.begin(), serials.end(), id.n), serials.end());
      if (serials.empty()) world.subgroups_open.erase(open);
    }
  }
  world.in_flight.erase(it);
}

void leave_group(SimWorld& world, int rank) {
  world.in_group[rank] = false;
  std::vector<CollectiveId> erased;
  for (auto& [id, c] : world.in_flight) {
    if (std::find(c.members.begin(), c.members.end(), rank) == c.members.end()) continue;
    if (!c.complete()) fail_collective(world, id);
    if (c.read_by(rank)) erased.push_back(id);  // it will never take the result
  }
  for (const CollectiveId& id : erased) erase_collective(world, id);
}

// The queued steps' time passes before anyone reads the clock (const: it only lets simulated time catch up).
double SimTransport::now_s() const {
  const_cast<SimTransport*>(this)->flush_computes();
  return sg4::Engine::get_clock();
}

void SimTransport::at_now(std::function<void(double now_s)> fn) {
  if (queued_flops_.empty()) return fn(sg4::Engine::get_clock());
  queued_then_.emplace_back(queued_flops_.size(), std::move(fn));
}

void SimTransport::flush_computes() {
  if (queued_flops_.empty()) return;
  // Swapped out (the callbacks may queue more) and back in empty: the three vectors keep their
  // room from one round to the next.
  std::vector<std::pair<size_t, std::function<void(double)>>> then;
  then.swap(queued_then_);
  const double start = sg4::Engine::get_clock();
  computing_since_s_ = start;
  std::vector<double>& ends = step_ends_;
  world_.marks->run(world_.hosts[rank_], queued_flops_, ends);
  queued_flops_.clear();
  computing_since_s_ = -1;
  for (size_t i = 0; i < ends.size(); ++i) {
    world_.recorder->event({rank_, EventKind::compute, i == 0 ? start : ends[i - 1], ends[i], 0, -1});
  }
  for (const auto& [steps, fn] : then) fn(steps == 0 ? start : ends[steps - 1]);
  if (queued_then_.empty()) {
    then.clear();
    queued_then_.swap(then);
  }
}

void SimTransport::compute(double flops, const std::function<void()>& work) {
  if (world_.marks) {  // timing only (no work): its time passes when the worker next needs it
    run_deferred();    // (none where steps are queued: whatever deferred a side emptied the queue first)
    queued_flops_.push_back(flops);
    return;
  }
  start_deferred();
  const double start = now_s();
  // The real step takes no simulated time: it runs first, or on the pool during the simulated compute.
  const std::function<void()> timed = [&] {
    TorchTimer timer(torch_time().steps_ns);
    work();
  };
  const bool pooled = world_.pool && !world_.timing_only;
  if (!pooled && !world_.timing_only) timed();
  StepPool::Ticket step = pooled ? world_.pool->run(timed) : StepPool::Ticket();
  computing_since_s_ = start;
  execute_here(flops);  // its simulated duration: flops / host speed (its speed profile)
  step.wait();
  computing_since_s_ = -1;
  world_.recorder->event({rank_, EventKind::compute, start, now_s(), 0, -1});
}

void SimTransport::rejoin(uint64_t next) {
  next_seq_ = next;
  started_.clear();
  helpers_.clear();
  deferred_.clear();
  queued_flops_.clear();
  queued_then_.clear();
  computing_since_s_ = waiting_since_s_ = -1;
  doing_ = nullptr;
}

std::string SimTransport::activity() const {
  if (computing_since_s_ >= 0) return "computing since " + g(computing_since_s_) + " s";
  if (waiting_since_s_ >= 0) {
    const auto it = started_.find(waiting_for_);
    const std::string what =
        it == started_.end() ? "" : std::string(it->second.what) + " of " + g(it->second.bytes) + " bytes per rank";
    return "waiting since " + g(waiting_since_s_) + " s for " + (waiting_for_.subgroup ? "subgroup collective " : "collective ") +
           std::to_string(waiting_for_.n) + " (" + what + ")";
  }
  return doing_ ? doing_ : "";
}

// The algorithms change only time and bytes: the numbers are mean_in_rank_order (all-reduce) or the
// contributions themselves (all-gather) whichever flows carry them, so results are bit-identical
// across the choices.
CollectiveFlows SimTransport::all_reduce_flows(const Members& shared, double bytes) const {
  const std::vector<int>& members = *shared;  // the lambdas hold `shared`: one copy for all sides
  const int rank = rank_, relay = world_size();
  Recorder* recorder = world_.recorder;
  const std::vector<sg4::Host*>* hosts = &world_.hosts;
  switch (world_.collectives.all_reduce) {
    case AllReduceAlgorithm::ring:
      if (world_.collectives.aggregated) {
        return {[=](const std::string& tag) { ring_all_reduce_aggregated(rank, *shared, *hosts, tag, bytes, *recorder); },
                {}};
      }
      return {[=](const std::string& tag) { ring_all_reduce_flows(rank, *shared, tag, bytes, *recorder); }, {}};
    case AllReduceAlgorithm::relay: {
      // √K lanes where no flow fails (relay_all_reduce_serve): K flows each, in √K actors of √K flows.
      const size_t lanes = world_.sides ? static_cast<size_t>(std::ceil(std::sqrt(members.size()))) : 1;
      return {[=](const std::string& tag) { relay_all_reduce_flows(rank, *shared, relay, tag, bytes, *recorder); },
              [=](const std::string& tag) { relay_all_reduce_serve(*shared, relay, tag, bytes, *recorder, lanes); }};
    }
    case AllReduceAlgorithm::hierarchical: {
      if (world_.sites.empty()) throw std::logic_error("SimTransport: hierarchical all-reduce needs SimWorld::sites");
      std::vector<std::vector<int>> sites;  // the members of each site; a site with none drops out
      for (const auto& site : world_.sites) {
        std::vector<int> present;
        for (int r : site) {
          if (std::find(members.begin(), members.end(), r) != members.end()) present.push_back(r);
        }
        if (!present.empty()) sites.push_back(std::move(present));
      }
      return {[=](const std::string& tag) { hierarchical_all_reduce_flows(rank, sites, tag, bytes, *recorder); }, {}};
    }
  }
  throw std::logic_error("SimTransport: unknown all-reduce algorithm");
}

CollectiveFlows SimTransport::all_gather_flows(const Members& shared, double bytes) const {
  const int rank = rank_, relay = world_size();
  Recorder* recorder = world_.recorder;
  const std::vector<sg4::Host*>* hosts = &world_.hosts;
  if (world_.collectives.aggregated) {
    switch (world_.collectives.all_gather) {
      case AllGatherAlgorithm::mesh:
        return {[=](const std::string& tag) { mesh_all_gather_aggregated(rank, *shared, *hosts, tag, bytes, *recorder); },
                {}};
      case AllGatherAlgorithm::ring:
        return {[=](const std::string& tag) { ring_all_gather_aggregated(rank, *shared, *hosts, tag, bytes, *recorder); },
                {}};
      case AllGatherAlgorithm::relay:
        return {[=](const std::string& tag) {
                  relay_all_gather_aggregated(rank, *shared, relay, tag, bytes, *recorder);
                },
                [=](const std::string& tag) { relay_all_gather_aggregated_serve(*shared, relay, tag, bytes, *recorder); }};
    }
  }
  switch (world_.collectives.all_gather) {
    case AllGatherAlgorithm::mesh:
      return {[=](const std::string& tag) { mesh_all_gather_flows(rank, *shared, tag, bytes, *recorder); }, {}};
    case AllGatherAlgorithm::ring:
      return {[=](const std::string& tag) { ring_all_gather_flows(rank, *shared, tag, bytes, *recorder); }, {}};
    case AllGatherAlgorithm::relay:
      return {[=](const std::string& tag) { relay_all_gather_flows(rank, *shared, relay, tag, bytes, *recorder); },
              [=](const std::string& tag) { relay_all_gather_serve(*shared, relay, tag, bytes, *recorder); }};
  }
  throw std::logic_error("SimTransport: unknown all-gather algorithm");
}

// A side's flows, as a job for whichever actor runs them: a flow that fails (a cut link, a peer's host
// gone) fails the whole collective, which stops every other side's flows too.
static std::function<void()> side_job(SimWorld& world, CollectiveId id, std::function<void(const std::string&)> side,
                                      uint64_t slot) {
  return [&world, id, side = std::move(side), slot] {
    try {
      side("slot-" + std::to_string(slot));
    } catch (const simgrid::Exception&) {  // NetworkFailureException, and comms cancelled under it
      fail_collective(world, id);
      return;
    }
    auto c = world.in_flight.find(id);
    if (c != world.in_flight.end()) ++c->second.sides_done;
    if (auto left = world.slot_sides_left.find(slot); --left->second == 0) {
      world.slot_sides_left.erase(left);
      world.free_slots.push_back(slot);
    }
  };
}

// Runs `job` in a helper actor on `host`: a kept one (SimWorld::sides; the run to wait on) or one of its
// own (a null run: join it).
static std::pair<sg4::ActorPtr, std::shared_ptr<SideRun>> run_side(SimWorld& world, const std::string& name,
                                                                  sg4::Host* host, std::function<void()> job) {
  if (world.sides) return world.sides->run(host, std::move(job));
  // A side only drives SimGrid comms, yet its stack is 64 MiB, on purpose: SimGrid 3.32's set_stacksize
  // takes KiB, and a stack that large is a mapping of its own, whose pages go back when it ends, where
  // small ones share the heap with everything else and fragment it. Under glibc's allocator, 4096
  // workers x 100 rounds (bench/scale.py, ring) took 835 -> 1572 MiB with 64 KiB stacks (bench/README.md,
  // 2026-11-26, later); under jemalloc, which the programs now use, a 4096-worker run with churn took
  // 823-831 MiB against 694-695 MiB, in the same time (bench/README.md, 2026-11-27).
  constexpr unsigned kSideStackKiB = 64 * 1024;
  return {sg4::Actor::init(name, host)->set_stacksize(kSideStackKiB)->start(std::move(job)), nullptr};
}

void SimTransport::start_deferred() {
  flush_computes();
  run_deferred();
}

void SimTransport::run_deferred() {
  for (auto& [id, job] : deferred_) {  // deferred only where the sides are kept (SimWorld::sides)
    auto [actor, run] = world_.sides->run(world_.hosts[rank_], std::move(job));
    helpers_[id] = {std::move(actor), std::move(run)};
  }
  deferred_.clear();
}

CollectiveId SimTransport::next_id(const std::vector<int>& group) {
  if (group.empty()) return {false, next_seq_++};
  auto& open = world_.subgroups_open[group];  // its collectives in flight, oldest first
  for (uint64_t serial : open) {
    const SimCollective& c = world_.in_flight.at({true, serial});
    if (std::binary_search(c.members.begin(), c.members.end(), rank_) &&
        std::find(c.joined.begin(), c.joined.end(), rank_) == c.joined.end()) {
      return {true, serial};
    }
  }
  open.push_back(world_.next_subgroup++);
  return {true, open.back()};
}

CollectiveId SimTransport::start(const std::vector<int>& group, std::vector<torch::Tensor> mine, const char* what,
                                 double bytes, const std::function<CollectiveFlows(const Members&)>& flows_for) {
  start_deferred();
  const CollectiveId id = next_id(group);
  const std::string tag = (id.subgroup ? "subgroup-" : "collective-") + std::to_string(id.n);
  started_[id] = {what, bytes};
  SimCollective& c = world_.in_flight[id];
  const bool first = c.contributions.empty();
  if (first) {
    c.named = group;
    c.contributions.resize(world_size());
    c.members = world_.members();
    if (!group.empty()) {  // the named ranks in the group now
      std::vector<int> in_group;
      std::set_intersection(c.members.begin(), c.members.end(), group.begin(), group.end(), std::back_inserter(in_group));
      c.members = std::move(in_group);
    }
    c.shared_members = std::make_shared<const std::vector<int>>(c.members);
    c.unread.assign(world_size(), false);
    for (int r : c.members) c.unread[r] = true;
    c.unread_left = c.members.size();
  }
  if (!std::binary_search(c.members.begin(), c.members.end(), rank_)) {  // members are in rank order
    throw std::logic_error("SimTransport: rank " + std::to_string(rank_) + " called " + tag +
                           ", a collective it is not a member of");
  }
  if (id.subgroup) c.joined.push_back(rank_);
  c.contributions[rank_] = std::move(mine);
  ++c.arrived;
  if (c.failed) return id;  // a member was lost before this one arrived: no flows, it fails
  CollectiveFlows flows = flows_for(c.shared_members);
  if (first) {  // the collective's mailbox slot; the relay must be listening from the first arrival on
    if (world_.free_slots.empty()) {
      c.slot = world_.next_slot++;
    } else {
      c.slot = world_.free_slots.back();
      world_.free_slots.pop_back();
    }
    world_.slot_sides_left[c.slot] = c.members.size() + (flows.relay_side ? 1 : 0);
    if (flows.relay_side) {
      if (!world_.relay) throw std::logic_error("SimTransport: a relay algorithm needs SimWorld::relay");
      auto relay = run_side(world_, tag + "-relay", world_.relay, side_job(world_, id, std::move(flows.relay_side), c.slot));
      c.flows.push_back(relay.first->get_pid());
    }
  }
  std::function<void()> job = side_job(world_, id, std::move(flows.rank_side), c.slot);
  if (world_.sides) {  // a world that never fails: this rank may run its side itself (deferred_)
    c.flows.push_back(sg4::this_actor::get_pid());
    deferred_.emplace_back(id, std::move(job));
    return id;
  }
  auto [actor, run] = run_side(world_, tag + "-" + std::to_string(rank_), world_.hosts[rank_], std::move(job));
  c.flows.push_back(actor->get_pid());
  helpers_[id] = {std::move(actor), std::move(run)};
  return id;
}

bool SimTransport::finish(const CollectiveId& id, const std::function<void(SimCollective&)>& read,
                          const std::function<void(SimCollective&)>& salvage) {
  const double start = now_s();  // after the queued steps
  waiting_since_s_ = start;
  waiting_for_ = id;
  if (deferred_.size() == 1 && deferred_.front().first == id) {
    // Waited on before anything else: this rank runs its side's flows itself, as a helper would
    // (on this host, from now), without one.
    const std::function<void()> job = std::move(deferred_.front().second);
    deferred_.clear();
    job();
  }
  start_deferred();
  if (auto helper = helpers_.find(id); helper != helpers_.end()) {
    if (helper->second.run) {
      SidePool::wait(helper->second.run);
    } else {
      helper->second.actor->join();
    }
    helpers_.erase(helper);
  }
  SimCollective* c = &world_.in_flight.at(id);
  if (world_.agree_on_commit && !c->failed) {
    // Commit only on what every member will commit: wait until every side's flows have ended (or the
    // collective failed), so that no member applies a result another one throws away.
    const std::vector<aid_t> flows = c->flows;
    for (aid_t pid : flows) {
      if (sg4::ActorPtr side = sg4::Actor::by_pid(pid)) side->join();
    }
    c = &world_.in_flight.at(id);
  }
  if (c->failed) {
    // Members notice a failure as NCCL and Gloo do: when their timeout runs out.
    sg4::this_actor::sleep_until(std::max(c->failed_at_s, start) + world_.failure_timeout_s);
    c = &world_.in_flight.at(id);
  }
  waiting_since_s_ = -1;
  started_.erase(id);
  if (now_s() > start) world_.recorder->event({rank_, EventKind::wait, start, now_s(), 0, -1});
  const bool completed = !c->failed;
  // Every member's flows have finished only once all members contributed: the result is complete.
  if (completed) {
    read(*c);
  } else {
    salvage(*c);
  }
  if (c->read_by(rank_)) erase_collective(world_, id);
  return completed;
}

Pending SimTransport::all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) { return reduce({}, xs, w); }

Pending SimTransport::all_reduce_mean_among(const std::vector<int>& group, std::vector<torch::Tensor>& xs, Wire w) {
  check_group(group, rank_, world_size());
  return reduce(group, xs, w);
}

Pending SimTransport::all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                                 std::vector<std::vector<torch::Tensor>>& out) {
  return gather({}, mine, bytes, out);
}

Pending SimTransport::all_gather_among(const std::vector<int>& group, const std::vector<torch::Tensor>& mine,
                                       double bytes, std::vector<std::vector<torch::Tensor>>& out) {
  check_group(group, rank_, world_size());
  return gather(group, mine, bytes, out);
}

Pending SimTransport::reduce(const std::vector<int>& group, std::vector<torch::Tensor>& xs, Wire w) {
  std::vector<torch::Tensor> mine;
  if (!world_.timing_only) {
    for (const auto& x : xs) mine.push_back(through_wire(x.detach(), w.format));
  }
  const double bytes = wire_bytes(xs, w.format) * w.scale;
  const CollectiveId id = start(group, std::move(mine), "all_reduce", bytes,
                                [&](const Members& members) { return all_reduce_flows(members, bytes); });
  return Pending([this, id, &xs, format = w.format] {
    return finish(
        id,
        [&](SimCollective& c) {
          if (world_.timing_only) return;  // no values: xs keep their shapes
          if (c.result.empty()) c.result = mean_in_rank_order(c.contributions, format);
          for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(c.result[i]);
        },
        [](SimCollective&) {});  // results untouched
  });
}

Pending SimTransport::gather(const std::vector<int>& group, const std::vector<torch::Tensor>& mine, double bytes,
                             std::vector<std::vector<torch::Tensor>>& out) {
  std::vector<torch::Tensor> copy;
  for (const auto& x : mine) copy.push_back(x.detach().clone());
  const CollectiveId id = start(group, std::move(copy), "all_gather", bytes,
                                [&](const Members& members) { return all_gather_flows(members, bytes); });
  return Pending([this, id, &out] {
    return finish(
        id, [&](SimCollective& c) { out = gathered_copy(c.contributions); },
        [&](SimCollective& c) {  // what arrived: the contributions of the members still in the group
          std::vector<std::vector<torch::Tensor>> alive(c.contributions.size());
          for (int r : c.members) {
            if (world_.in_group.empty() || world_.in_group[r]) alive[r] = c.contributions[r];
          }
          out = gathered_copy(alive);
        });
  });
}

}  // namespace locosim
