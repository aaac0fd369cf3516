// write_trace_json: spans on non-overlapping tracks, link counters, in nlohmann::json's own text.
#include "report/trace.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>
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

// The trace's events, one a line, as nlohmann::json's dump() writes them: keys in its order (sorted),
// numbers by its own to_chars, strings escaped as it escapes them, so the file is the same bytes
// whichever way an event was made. The many (a span per step and message, a counter per link and
// bucket) are formatted straight into a buffer: building each as a json object and dumping it made
// the trace the longest writer by far (relay, 1024 workers x 100 rounds: 3.5-3.9 s against 2.1 s with
// no trace; 2.0 s written this way); the few (each track's metadata) are still built.
class TraceEvents {
 public:
  explicit TraceEvents(std::ostream& out) : out_(out) {}
  TraceEvents(const TraceEvents&) = delete;
  TraceEvents& operator=(const TraceEvents&) = delete;

  void push_back(const nlohmann::json& event) {
    next();
    buf_ += event.dump();
    done();
  }
  // {"args":{"bytes":..,"peer":..},"cat":..,"dur":..,"name":..,"ph":"X","pid":..,"tid":..,"ts":..}
  void span(const EventRow& e, const char* cat, int pid, int tid) {
    next();
    buf_ += '{';
    if (e.kind == EventKind::send || e.kind == EventKind::recv || e.kind == EventKind::join) {
      buf_ += "\"args\":{\"bytes\":";
      number(e.bytes);
      buf_ += ",\"peer\":";
      integer(e.peer);
      buf_ += "},";
    }
    buf_ += "\"cat\":";
    text(cat);
    buf_ += ",\"dur\":";
    number(microseconds(nanoseconds(e.end_s) - nanoseconds(e.start_s)));
    buf_ += ",\"name\":";
    text(event_kind_name(e.kind));
    buf_ += ",\"ph\":\"X\",\"pid\":";
    integer(pid);
    buf_ += ",\"tid\":";
    integer(tid);
    buf_ += ",\"ts\":";
    number(microseconds(nanoseconds(e.start_s)));
    buf_ += '}';
    done();
  }
  // {"args":{"Mbps":..},"name":..,"ph":"C","pid":..,"tid":0,"ts":..}
  void counter(std::string_view name, int pid, double start_s, double mbps) {
    next();
    buf_ += "{\"args\":{\"Mbps\":";
    number(mbps);
    buf_ += "},\"name\":";
    text(name);
    buf_ += ",\"ph\":\"C\",\"pid\":";
    integer(pid);
    buf_ += ",\"tid\":0,\"ts\":";
    number(microseconds(nanoseconds(start_s)));
    buf_ += '}';
    done();
  }
  // Hands what is buffered to the stream: before the trace's closing bracket.
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  static constexpr size_t kFlushAt = 1 << 20;

  void next() {
    buf_ += first_ ? "\n" : ",\n";
    first_ = false;
  }
  void done() {
    if (buf_.size() >= kFlushAt) flush();
  }
  void number(double v) {  // a json number_float
    if (!std::isfinite(v)) {
      buf_ += "null";
      return;
    }
    std::array<char, 64> digits;
    buf_.append(digits.data(), nlohmann::detail::to_chars(digits.data(), digits.data() + digits.size(), v));
  }
  void integer(int64_t v) {  // a json number_integer
    std::array<char, 24> digits;
    buf_.append(digits.data(), std::to_chars(digits.data(), digits.data() + digits.size(), v).ptr);
  }
  void text(std::string_view v) {  // a json string: as it is, unless dump() would escape something
    const bool plain = std::all_of(v.begin(), v.end(), [](char c) {
      const auto u = static_cast<unsigned char>(c);
      return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
    });
    if (!plain) {
      buf_ += nlohmann::json(std::string(v)).dump();
      return;
    }
    buf_ += '"';
    buf_ += v;
    buf_ += '"';
  }

  std::ostream& out_;
  std::string buf_;
  bool first_ = true;
};

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
  TraceEvents events(out);
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
        events.span(*spans[i], family == send_family || family == recv_family ? "network" : "worker", pid,
                    first_tid + lane);
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
        events.counter(l.link, pid, links->bucket_start_s(b), mbps);
      }
      events.counter(l.link, pid, links->end_s, 0.0);
    }
    // A link the world slowed or cut: its capacity over time, beside its traffic.
    for (const LinkTraffic& l : links->links) {
      if (l.capacity_bytes.empty()) continue;
      const std::string name = "capacity " + l.link;
      for (size_t b = 0; b < l.capacity_bytes.size(); ++b) {
        const double seconds = links->bucket_end_s(b) - links->bucket_start_s(b);
        const double mbps = seconds > 0 ? l.capacity_bytes[b] * 8 / seconds / 1e6 : 0;
        events.counter(name, pid, links->bucket_start_s(b), mbps);
      }
    }
  }

  events.flush();
  out << "\n]}\n";
  file.close();
}

TraceDetail trace_detail(const std::string& report_trace) {
  if (report_trace == "none") return TraceDetail::none;
  if (report_trace == "collectives") return TraceDetail::collectives;
  return TraceDetail::messages;
}

}  // namespace locosim
