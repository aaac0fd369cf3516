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

Pending SimTransport::all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) {
  const uint64_t seq = next_seq_++;
  SimCollective& c = world_.in_flight[seq];
  if (c.contributions.empty()) {
    c.contributions.resize(world_size());
    c.readers_left = world_size();
  }
  for (const auto& x : xs) c.contributions[rank_].push_back(through_wire(x.detach(), w.format));

  const double bytes = wire_bytes(xs, w.format) * w.scale;
  const std::string tag = "allreduce-" + std::to_string(seq);
  const int rank = rank_, world = world_size();
  Recorder* recorder = world_.recorder;
  sg4::ActorPtr flows = sg4::Actor::create(tag + "-" + std::to_string(rank_), world_.hosts[rank_],
                                           [=] { ring_all_reduce_flows(rank, world, tag, bytes, *recorder); });

  return Pending([this, seq, flows, &xs, format = w.format] {
    const double start = now_s();
    flows->join();
    if (now_s() > start) world_.recorder->event({rank_, EventKind::wait, start, now_s(), 0, -1});
    // Every rank's flows have finished only once all ranks contributed: the mean is complete.
    SimCollective& c = world_.in_flight.at(seq);
    if (c.result.empty()) c.result = mean_in_rank_order(c.contributions, format);
    for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(c.result[i]);
    if (--c.readers_left == 0) world_.in_flight.erase(seq);
  });
}

}  // namespace locosim
