// SimTransport: compute charged as host FLOPs, collectives as flows in helper actors.
#include "sim/sim_transport.hpp"

#include <simgrid/s4u.hpp>

#include "sim/collectives.hpp"

namespace sg4 = simgrid::s4u;

namespace locosim {

double SimTransport::now_s() const { return sg4::Engine::get_clock(); }

void SimTransport::compute(double flops, const std::function<void()>& work) {
  const double start = now_s();
  work();                            // the real step: takes no simulated time
  sg4::this_actor::execute(flops);   // its simulated duration: flops / host speed
  world_.recorder->event({rank_, EventKind::compute, start, now_s(), 0, -1});
}

std::pair<uint64_t, sg4::ActorPtr> SimTransport::start(std::vector<torch::Tensor> mine,
                                                       std::function<void(const std::string&)> flows) {
  const uint64_t seq = next_seq_++;
  SimCollective& c = world_.in_flight[seq];
  if (c.contributions.empty()) {
    c.contributions.resize(world_size());
    c.readers_left = world_size();
  }
  c.contributions[rank_] = std::move(mine);
  const std::string tag = "collective-" + std::to_string(seq);
  sg4::ActorPtr actor = sg4::Actor::create(tag + "-" + std::to_string(rank_), world_.hosts[rank_],
                                           [flows = std::move(flows), tag] { flows(tag); });
  return {seq, actor};
}

void SimTransport::finish(uint64_t seq, const sg4::ActorPtr& flows, const std::function<void(SimCollective&)>& read) {
  const double start = now_s();
  flows->join();
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
  const int rank = rank_, world = world_size();
  Recorder* recorder = world_.recorder;
  auto [seq, flows] = start(std::move(mine), [=](const std::string& tag) {
    ring_all_reduce_flows(rank, world, tag, bytes, *recorder);
  });
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
  const int rank = rank_, world = world_size();
  Recorder* recorder = world_.recorder;
  auto [seq, flows] = start(std::move(copy), [=](const std::string& tag) {
    mesh_all_gather_flows(rank, world, tag, bytes, *recorder);
  });
  return Pending([this, seq = seq, flows = flows, &out] {
    finish(seq, flows, [&](SimCollective& c) {
      out.assign(c.contributions.size(), {});
      for (size_t r = 0; r < c.contributions.size(); ++r) {
        for (const auto& x : c.contributions[r]) out[r].push_back(x.clone());
      }
    });
  });
}

}  // namespace locosim
