// Recorder: CSV output of metrics and events. Numbers are printed with %.9g (times, bytes) and %.6f
// (losses) so the same run always writes the same bytes.
#include "algorithms/recorder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <tuple>

namespace locosim {

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::compute: return "compute";
    case EventKind::send: return "send";
    case EventKind::recv: return "recv";
    case EventKind::wait: return "wait";
  }
  return "?";
}

namespace {

std::string fmt_g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string fmt_loss(double v) {
  if (std::isnan(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

std::ofstream open_for_writing(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot be written");
  return out;
}

}  // namespace

void Recorder::write_metrics_csv(const std::string& path) const {
  std::vector<MetricRow> rows = metrics_;
  std::stable_sort(rows.begin(), rows.end(), [](const MetricRow& a, const MetricRow& b) {
    return std::tie(a.worker, a.step) < std::tie(b.worker, b.step);
  });
  std::ofstream out = open_for_writing(path);
  out << "time_s,worker,step,tokens,train_loss,eval_loss\n";
  for (const auto& r : rows) {
    out << fmt_g(r.time_s) << ',' << r.worker << ',' << r.step << ',' << r.tokens << ',' << fmt_loss(r.train_loss)
        << ',' << fmt_loss(r.eval_loss) << '\n';
  }
}

void Recorder::write_events_csv(const std::string& path) const {
  std::vector<EventRow> rows = events_;
  std::stable_sort(rows.begin(), rows.end(), [](const EventRow& a, const EventRow& b) {
    return std::tie(a.worker, a.start_s, a.end_s) < std::tie(b.worker, b.start_s, b.end_s);
  });
  std::ofstream out = open_for_writing(path);
  out << "worker,kind,start_s,end_s,bytes,peer\n";
  for (const auto& r : rows) {
    out << r.worker << ',' << event_kind_name(r.kind) << ',' << fmt_g(r.start_s) << ',' << fmt_g(r.end_s) << ','
        << fmt_g(r.bytes) << ',' << (r.peer >= 0 ? std::to_string(r.peer) : "") << '\n';
  }
}

}  // namespace locosim
