// Per-link traffic of one simulated run, as SimGrid's flow model shares it: each link's usage is
// integrated over every step of simulated time, then cut into fixed time buckets (links.csv, the
// trace's bandwidth counters, notebooks/bandwidth.ipynb). Not here: who sent what (events.csv).
#pragma once
#include <simgrid/forward.h>

#include <memory>
#include <string>
#include <vector>

namespace locosim {

// One link's traffic, bucketed.
struct LinkTraffic {
  std::string link;           // the SimGrid link ("home-0.up", "eu.lan.dc-0.down", "eu.up", "wan.eu->us")
  std::string direction;      // "up" or "down" (out of / into a host or site), "wan" (a site-to-site path)
  int worker = -1;            // rank of the host whose own access or LAN link it is (the relay, if any, is
                              // world_size, as in events.csv); -1 for links several hosts share
  std::string host;           // that host's name; "" for shared links
  double bandwidth_bps = 0;
  std::vector<double> bytes;  // per bucket
};

// Bucket b covers [b·bucket_s, min((b+1)·bucket_s, end_s)); every link has the same buckets.
struct LinkReport {
  double bucket_s = 0;
  double end_s = 0;
  std::vector<LinkTraffic> links;  // each host's up then down link by rank, then shared links by name

  size_t bucket_count() const { return links.empty() ? 0 : links.front().bytes.size(); }
  double bucket_start_s(size_t b) const { return static_cast<double>(b) * bucket_s; }
  double bucket_end_s(size_t b) const;
};

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

// A round bucket width (1, 2 or 5 × a power of ten seconds) that cuts end_s into at most 200 buckets.
double auto_bucket_s(double end_s);

// links.csv: link,direction,worker,host,start_s,end_s,bytes,utilization (utilization = bytes over what
// the link could carry in the bucket). One row per link and bucket, empty buckets included.
void write_links_csv(const LinkReport& report, const std::string& path);

}  // namespace locosim
