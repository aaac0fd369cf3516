// What a run records: per-step metrics and per-worker activity intervals, kept in memory and
// written as the run folder's CSV files (report/recorder_csv.hpp). Plain data: both backends fill it the same way.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "algorithms/sync.hpp"

namespace locosim {

struct MetricRow {
  double time_s = 0;
  int worker = 0;
  int64_t step = 0;        // 1-based: the number of steps done
  int64_t tokens = 0;      // tokens this worker has trained on so far
  double train_loss = 0;
  double eval_loss = std::numeric_limits<double>::quiet_NaN();  // NaN where not evaluated
  Sync sync = Sync::none;  // what the step's synchronization did, if it ended one
  bool last = false;       // the worker's last step: it finished the run (workers may train different
                           // numbers of steps: timed rounds, asynchronous DiLoCo). Not a metrics.csv column.
};

// compute, send, recv, wait: what a worker does. On a changing world also: away (the worker is out
// of the group: its host failed, until it is back in), join (its download of the group's state:
// bytes, peer = the donor, or world_size for the relay), discard (an interval whose work was thrown
// away: an aborted sync, or work lost with the worker), link_off (one of the worker's own access
// links was off; peer -1).
enum class EventKind { compute, send, recv, wait, away, join, discard, link_off };
const char* event_kind_name(EventKind kind);

struct EventRow {
  int worker = 0;          // rank; the relay host (not a worker) records as world_size, and is that peer
  EventKind kind = EventKind::compute;
  double start_s = 0;
  double end_s = 0;
  double bytes = 0;        // send/recv only
  int peer = -1;           // send/recv only
};

class Recorder {
 public:
  void metric(const MetricRow& row) {
    metrics_.push_back(row);
    if (on_metric) on_metric(row);
  }
  void event(const EventRow& row) { events_.push_back(row); }

  // Room for about this many rows, where the run can tell (a row a worker-step, about two events).
  // At thousands of workers each doubling of a full vector copies every row recorded so far through
  // memory the simulation then has to fetch back; room not filled is address space only (no page is
  // touched until a row lands there). Capped: an estimate of billions of rows is no reason to ask
  // for them up front. A hint only: where the address space is limited (ulimit -v) and the room
  // cannot be had, the rows grow as they come.
  void reserve(size_t metric_rows, size_t event_rows) {
    constexpr size_t kMost = size_t{1} << 24;
    try {
      metrics_.reserve(std::min(metric_rows, kMost));
      events_.reserve(std::min(event_rows, kMost));
    } catch (const std::bad_alloc&) {
    }
  }
  const std::vector<MetricRow>& metrics() const { return metrics_; }
  const std::vector<EventRow>& events() const { return events_; }
  // A re-timed run puts the losses of the run it re-times into its rows (sim/simulate.hpp).
  std::vector<MetricRow>& mutable_metrics() { return metrics_; }

  // Called with each metric row as it is recorded (the CLI's progress line); may be left empty.
  std::function<void(const MetricRow&)> on_metric;

 private:
  std::vector<MetricRow> metrics_;
  std::vector<EventRow> events_;
};

}  // namespace locosim
