// SimTransport: compute charged as host FLOPs, collectives as flows in helper actors.
#include "sim/sim_transport.hpp"

#include <simgrid/s4u.hpp>

#include <cstdio>
#include <stdexcept>

#include "sim/collectives.hpp"

namespace sg4 = simgrid::s4u;

namespace locosim {
namespace {

std::string g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

double SimTransport::now_s() const { return sg4::Engine::get_clock(); }

void SimTransport::compute(double flops, const std::function<void()>& work) {
  const double start = now_s();
  work();                            // the real step: takes no simulated time
  activity_ = "computing since " + g(start) + " s";
  sg4::this_actor::execute(flops);   // its simulated duration: flops / host speed
  activity_.clear();
  world_.recorder->event({rank_, EventKind::compute, start, now_s(), 0, -1});
}

// The algorithms change only time and bytes: the numbers are mean_in_rank_order (all-reduce) or the
// contributions themselves (all-gather) whichever flows carry them, so results are bit-identical
// across the choices.
CollectiveFlows SimTransport::all_reduce_flows(double bytes) const {
  const int rank = rank_, world = world_size();
  Recorder* recorder = world_.recorder;
  switch (world_.collectives.all_reduce) {
    case AllReduceAlgorithm::ring:
      return {[=](const std::string& tag) { ring_all_reduce_flows(rank, world, tag, bytes, *recorder); }, {}};
    case AllReduceAlgorithm::relay:
      return {[=](const std::string& tag) { relay_all_reduce_flows(rank, world, tag, bytes, *recorder); },
              [=](const std::string& tag) { relay_all_reduce_serve(world, tag, bytes, *recorder); }};
    case AllReduceAlgorithm::hierarchical:
      if (world_.sites.empty()) throw std::logic_error("SimTransport: hierarchical all-reduce needs SimWorld::sites");
      return {[=, sites = world_.sites](const std::string& tag) {
                hierarchical_all_reduce_flows(rank, sites, tag, bytes, *recorder);
              },
              {}};
  }
  throw std::logic_error("SimTransport: unknown all-reduce algorithm");
}

CollectiveFlows SimTransport::all_gather_flows(double bytes) const {
  const int rank = rank_, world = world_size();
  Recorder* recorder = world_.recorder;
  switch (world_.collectives.all_gather) {
    case AllGatherAlgorithm::mesh:
      return {[=](const std::string& tag) { mesh_all_gather_flows(rank, world, tag, bytes, *recorder); }, {}};
    case AllGatherAlgorithm::ring:
      return {[=](const std::string& tag) { ring_all_gather_flows(rank, world, tag, bytes, *recorder); }, {}};
    case AllGatherAlgorithm::relay:
      return {[=](const std::string& tag) { relay_all_gather_flows(rank, world, tag, bytes, *recorder); },
              [=](const std::string& tag) { relay_all_gather_serve(world, tag, bytes, *recorder); }};
  }
  throw std::logic_error("SimTransport: unknown all-gather algorithm");
}

std::pair<uint64_t, sg4::ActorPtr> SimTransport::start(std::vector<torch::Tensor> mine, CollectiveFlows flows) {
  const uint64_t seq = next_seq_++;
  const std::string tag = "collective-" + std::to_string(seq);
  SimCollective& c = world_.in_flight[seq];
  if (c.contributions.empty()) {  // the first rank to arrive: the relay must be listening from now on
    c.contributions.resize(world_size());
    c.readers_left = world_size();
    if (flows.relay_side) {
      if (!world_.relay) throw std::logic_error("SimTransport: a relay algorithm needs SimWorld::relay");
      sg4::Actor::create(tag + "-relay", world_.relay, [serve = flows.relay_side, tag] { serve(tag); });
    }
  }
  c.contributions[rank_] = std::move(mine);
  sg4::ActorPtr actor = sg4::Actor::create(tag + "-" + std::to_string(rank_), world_.hosts[rank_],
                                           [side = std::move(flows.rank_side), tag] { side(tag); });
  return {seq, actor};
}

void SimTransport::finish(uint64_t seq, const sg4::ActorPtr& flows, const std::function<void(SimCollective&)>& read) {
  const double start = now_s();
  activity_ = "waiting since " + g(start) + " s for collective " + std::to_string(seq) + " (" +
              started_[seq] + ")";
  flows->join();
  activity_.clear();
  started_.erase(seq);
  if (now_s() > start) world_.recorder->event({rank_, EventKind::wait, start, now_s(), 0, -1});
  // Every rank's flows have finished only once all ranks contributed: the result is complete.
  SimCollective& c = world_.in_flight.at(seq);
  read(c);
  if (--c.readers_left == 0) world_.in_flight.erase(seq);
}

Pending SimTransport::all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) {
  std::vector<torch::Tensor> mine;
  for (const auto& x : xs) mine.push_back(through_wire(x.detach(), w.format));
  const double bytes = wire_bytes(xs, w.format) * w.scale;
  auto [seq, flows] = start(std::move(mine), all_reduce_flows(bytes));
  started_[seq] = "all_reduce of " + g(bytes) + " bytes per rank";
  return Pending([this, seq = seq, flows = flows, &xs, format = w.format] {
    finish(seq, flows, [&](SimCollective& c) {
      if (c.result.empty()) c.result = mean_in_rank_order(c.contributions, format);
      for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(c.result[i]);
    });
  });
}

Pending SimTransport::all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                                 std::vector<std::vector<torch::Tensor>>& out) {
  std::vector<torch::Tensor> copy;
  for (const auto& x : mine) copy.push_back(x.detach().clone());
  auto [seq, flows] = start(std::move(copy), all_gather_flows(bytes));
  started_[seq] = "all_gather of " + g(bytes) + " bytes per rank";
  return Pending([this, seq = seq, flows = flows, &out] {
    finish(seq, flows, [&](SimCollective& c) {
      out = gathered_copy(c.contributions);
    });
  });
}

}  // namespace locosim
