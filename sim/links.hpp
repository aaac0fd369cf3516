// Per-link traffic of one simulated run, as SimGrid's flow model shares it: each link's usage is
// integrated over every step of simulated time, then cut into fixed time buckets (links.csv, the
// trace's bandwidth counters, notebooks/bandwidth.ipynb). Not here: who sent what (events.csv).
#pragma once
#include <simgrid/forward.h>

#include <memory>
#include <vector>

#include "report/link_report.hpp"

namespace locosim {

// Measures every link of the platform from the moment it is constructed.
//
// Why this way: SimGrid's flow model holds each link's usage (bytes/s, the sum of its flows' rates)
// constant between two steps of simulated time, and Engine::on_time_advance fires after each step,
// before the next step re-solves the rates and before finished flows leave the link. Integrating
// Link::get_usage() × step at that point therefore counts every byte exactly, including rate changes
// that no communication event marks (a flow whose latency has just elapsed). The alternative, spreading
// each send event of events.csv over its links, cannot know a flow's rate within the event.
class LinkMeter {
 public:
  // REQUIRES: the platform is built and the Engine has not run yet; at most one meter per Engine.
  // `workers` are the worker hosts by rank; any other host of the platform (a relay) is numbered after
  // them, in the Engine's order.
  explicit LinkMeter(const std::vector<simgrid::s4u::Host*>& workers);

  // The traffic so far, cut at end_s into buckets of bucket_s (0: auto_bucket_s(end_s)).
  LinkReport report(double bucket_s, double end_s) const;

  struct State;  // shared with the time-advance callback, which outlives no Engine but may outlive this

 private:
  std::shared_ptr<State> state_;
};

}  // namespace locosim
