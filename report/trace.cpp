// write_trace_json: spans on non-overlapping tracks, link counters, written with nlohmann::json.
#include "report/trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>

#include "report/output_file.hpp"

namespace locosim {
namespace {

// Times are written in microseconds holding whole nanoseconds, each span's end rounded like the next
// span's start: a span that ends when the next begins never seems to overlap it by a rounding error.
int64_t nanoseconds(double s) { return std::llround(s * 1e9); }
double microseconds(int64_t ns) { return static_cast<double>(ns) / 1e3; }

// Spans of one family share a track name: a worker's own actor computes and waits one thing at a time;
// its collectives may send (and receive) several flows at once; its membership (away, join, work
// discarded) spans the others.
enum Family { main_family = 0, send_family = 1, recv_family = 2, membership_family = 3 };
const char* family_name(Family f) {
  switch (f) {
    case main_family: return "compute/wait";
    case send_family: return "send";
    case recv_family: return "recv";
    case membership_family: return "membership";
  }
  return "?";
}

Family family_of(EventKind kind) {
  switch (kind) {
    case EventKind::send: return send_family;
    case EventKind::recv: return recv_family;
    case EventKind::away:
    case EventKind::join:
    case EventKind::discard:
    case EventKind::link_off: return membership_family;
    default: return main_family;
  }
}

// Puts each span (sorted by start, longer first on ties) on the first lane where it either starts after
// everything open there has ended or fits inside the innermost open span; returns each span's lane.
std::vector<int> assign_lanes(const std::vector<const EventRow*>& spans) {
  std::vector<std::vector<double>> open_ends;  // per lane: ends of the nested spans still open
  std::vector<int> lanes;
  for (const EventRow* e : spans) {
    int chosen = -1;
    for (size_t lane = 0; lane < open_ends.size() && chosen < 0; ++lane) {
      auto& stack = open_ends[lane];
      while (!stack.empty() && stack.back() <= e->start_s) stack.pop_back();
      if (stack.empty() || e->end_s <= stack.back()) chosen = static_cast<int>(lane);
    }
    if (chosen < 0) {
      chosen = static_cast<int>(open_ends.size());
      open_ends.emplace_back();
    }
    open_ends[chosen].push_back(e->end_s);
    lanes.push_back(chosen);
  }
  return lanes;
}

nlohmann::json metadata(const char* what, int pid, int tid, const nlohmann::json& args) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", args}};
}

}  // namespace

void write_trace_json(const Recorder& recorder, const std::vector<std::string>& names, const LinkReport* links,
                      const std::string& path, TraceDetail detail) {
  if (detail == TraceDetail::none) return;
  // Spans by (worker, family), in start order.
  std::map<std::pair<int, int>, std::vector<const EventRow*>> tracks;
  int workers = static_cast<int>(names.size());
  for (const EventRow& e : recorder.events()) {
    workers = std::max(workers, e.worker + 1);
    const bool message = e.kind == EventKind::send || e.kind == EventKind::recv;
    if (message && detail == TraceDetail::collectives) continue;
    tracks[{e.worker, family_of(e.kind)}].push_back(&e);
  }

  // Written as it is made, one event at a time: memory stays that of the Recorder's rows.
  OutputFile file(path);
  std::ostream& out = file.out();
  out << R"({"displayTimeUnit":"ms","otherData":{"clock":"simulated time"},"traceEvents":[)";
  bool first = true;
  struct Stream {
    std::ostream& out;
    bool& first;
    void push_back(const nlohmann::json& event) {
      out << (first ? "\n" : ",\n") << event.dump();
      first = false;
    }
  } events{out, first};
  for (int w = 0; w < workers; ++w) {
    const std::string name = w < static_cast<int>(names.size()) ? names[w] : "relay (worker " + std::to_string(w) + ")";
    events.push_back(metadata("process_name", w + 1, 0, {{"name", name}}));
    events.push_back(metadata("process_sort_index", w + 1, 0, {{"sort_index", w}}));
  }
  for (auto& [key, spans] : tracks) {
    const auto [worker, family] = key;
    // Longest first among spans that start together; then a total order, as events.csv's.
    std::stable_sort(spans.begin(), spans.end(), [](const EventRow* a, const EventRow* b) {
      return std::tuple(a->start_s, -a->end_s, a->kind, a->peer, a->bytes) <
             std::tuple(b->start_s, -b->end_s, b->kind, b->peer, b->bytes);
    });
    const std::vector<int> lanes = assign_lanes(spans);
    const int lane_count = lanes.empty() ? 0 : *std::max_element(lanes.begin(), lanes.end()) + 1;
    const int pid = worker + 1;
    const int first_tid = 1 + 1000 * family;  // room for 1000 concurrent spans of one family
    for (int lane = 0; lane < lane_count; ++lane) {
      std::string track = family_name(static_cast<Family>(family));
      if (lane > 0) track += " " + std::to_string(lane + 1);
      events.push_back(metadata("thread_name", pid, first_tid + lane, {{"name", track}}));
      events.push_back(metadata("thread_sort_index", pid, first_tid + lane, {{"sort_index", first_tid + lane}}));
    }
    // Track by track, so every track's timestamps come out in order.
    for (int lane = 0; lane < lane_count; ++lane) {
      for (size_t i = 0; i < spans.size(); ++i) {
        if (lanes[i] != lane) continue;
        const EventRow& e = *spans[i];
        nlohmann::json span = {{"ph", "X"},
                               {"name", event_kind_name(e.kind)},
                               {"cat", family == send_family || family == recv_family ? "network" : "worker"},
                               {"pid", pid},
                               {"tid", first_tid + lane},
                               {"ts", microseconds(nanoseconds(e.start_s))},
                               {"dur", microseconds(nanoseconds(e.end_s) - nanoseconds(e.start_s))}};
        if (e.kind == EventKind::send || e.kind == EventKind::recv || e.kind == EventKind::join) span["args"] = {{"bytes", e.bytes}, {"peer", e.peer}};
        events.push_back(std::move(span));
      }
    }
  }

  if (links != nullptr) {
    const int pid = workers + 1;
    events.push_back(metadata("process_name", pid, 0, {{"name", "links (Mbps)"}}));
    events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", workers}}));
    for (const LinkTraffic& l : links->links) {
      if (std::all_of(l.bytes.begin(), l.bytes.end(), [](double b) { return b == 0; })) continue;
      for (size_t b = 0; b < l.bytes.size(); ++b) {
        const double seconds = links->bucket_end_s(b) - links->bucket_start_s(b);
        const double mbps = seconds > 0 ? l.bytes[b] * 8 / seconds / 1e6 : 0;
        events.push_back({{"ph", "C"}, {"name", l.link}, {"pid", pid}, {"tid", 0},
                          {"ts", microseconds(nanoseconds(links->bucket_start_s(b)))}, {"args", {{"Mbps", mbps}}}});
      }
      events.push_back({{"ph", "C"}, {"name", l.link}, {"pid", pid}, {"tid", 0},
                        {"ts", microseconds(nanoseconds(links->end_s))}, {"args", {{"Mbps", 0.0}}}});
    }
    // A link the world slowed or cut: its capacity over time, beside its traffic.
    for (const LinkTraffic& l : links->links) {
      if (l.capacity_bytes.empty()) continue;
      for (size_t b = 0; b < l.capacity_bytes.size(); ++b) {
        const double seconds = links->bucket_end_s(b) - links->bucket_start_s(b);
        const double mbps = seconds > 0 ? l.capacity_bytes[b] * 8 / seconds / 1e6 : 0;
        events.push_back({{"ph", "C"}, {"name", "capacity " + l.link}, {"pid", pid}, {"tid", 0},
                          {"ts", microseconds(nanoseconds(links->bucket_start_s(b)))}, {"args", {{"Mbps", mbps}}}});
      }
    }
  }

  out << "\n]}\n";
  file.close();
}

TraceDetail trace_detail(const std::string& report_trace) {
  if (report_trace == "none") return TraceDetail::none;
  if (report_trace == "collectives") return TraceDetail::collectives;
  return TraceDetail::messages;
}

}  // namespace locosim
