// Per-link traffic of one run, cut into fixed time buckets: the data behind links.csv, the trace's
// bandwidth counters and notebooks/bandwidth.ipynb. The simulator measures it from SimGrid
// (sim/links.hpp); the real backend derives it from each worker's recorded traffic.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "algorithms/recorder.hpp"

namespace locosim {

// One link's traffic, bucketed.
struct LinkTraffic {
  std::string link;           // the SimGrid link ("home-0.up", "eu.lan.dc-0.down", "eu.up", "wan.eu->us")
  std::string direction;      // "up" or "down" (out of / into a host or site), "wan" (a site-to-site path)
  int worker = -1;            // rank of the host whose own access or LAN link it is (the relay, if any, is
                              // world_size, as in events.csv); -1 for links several hosts share
  std::string host;           // that host's name; "" for shared links
  double bandwidth_bps = 0;     // nominal
  std::vector<double> bytes;    // per bucket
  // Per bucket, what the link could carry (its bandwidth over time, 0 while it is off) on a changing
  // world; empty: bandwidth_bps throughout.
  std::vector<double> capacity_bytes;
  // The stretches of time the link was off, (start_s, end_s).
  std::vector<std::pair<double, double>> off;

  double capacity_in(size_t bucket, double seconds) const {
    return capacity_bytes.empty() ? bandwidth_bps / 8 * seconds : capacity_bytes[bucket];
  }
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

// A round bucket width (1, 2 or 5 × a power of ten seconds) that cuts end_s into at most 200 buckets.
double auto_bucket_s(double end_s);

// The bucket width to use: `requested_s`, or auto_bucket_s when it is 0; widened (with a note on
// stderr naming both widths) when it would cut end_s into more than kMaxLinkBuckets buckets.
constexpr double kMaxLinkBuckets = 20000;
double bucket_width_s(double requested_s, double end_s);

// links.csv: link,direction,worker,host,start_s,end_s,bytes,utilization,capacity_bps (utilization =
// bytes over what the link could carry in the bucket; capacity_bps = that as a mean rate, which
// differs from the nominal bandwidth while the world slows the link or cuts it). One row per link and
// bucket, empty buckets included.
void write_links_csv(const LinkReport& report, const std::string& path);

// For backends that see no links: each worker's send and recv events, spread evenly over their
// intervals, as traffic on "<host>.up" and "<host>.down" (the worker's access links, whose bandwidths
// are given by rank).
LinkReport links_from_events(const Recorder& recorder, const std::vector<std::string>& hosts,
                             const std::vector<double>& up_bps, const std::vector<double>& down_bps, double bucket_s,
                             double end_s);

}  // namespace locosim
