// LinkReport helpers shared by both backends: bucket arithmetic, links.csv, traffic from events.
#include "report/link_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "report/csv_out.hpp"
#include "report/output_file.hpp"

namespace locosim {

double LinkReport::bucket_end_s(size_t b) const { return std::min(static_cast<double>(b + 1) * bucket_s, end_s); }

namespace {

// The smallest round width (1, 2 or 5 × a power of ten seconds) that cuts end_s into at most `count`.
double round_bucket_s(double end_s, double count) {
  const double wanted = end_s / count;
  if (!(wanted > 0)) return 1.0;
  double power = std::pow(10.0, std::floor(std::log10(wanted)));
  for (double step : {1.0, 2.0, 5.0, 10.0}) {
    if (step * power >= wanted * (1 - 1e-12)) return step * power;
  }
  return 10 * power;
}

}  // namespace

double auto_bucket_s(double end_s) { return round_bucket_s(end_s, 200); }

double bucket_width_s(double requested_s, double end_s) {
  if (!(requested_s > 0)) return auto_bucket_s(end_s);
  if (end_s / requested_s <= kMaxLinkBuckets) return requested_s;
  const double widened = round_bucket_s(end_s, kMaxLinkBuckets);
  std::fprintf(stderr, "note: report.link_bucket %.9g s would cut the run's %.9g s into %.0f buckets; widened to %.9g s "
               "(at most %.0f)\n", requested_s, end_s, std::ceil(end_s / requested_s), widened, kMaxLinkBuckets);
  return widened;
}

void write_links_csv(const LinkReport& report, const std::string& path) {
  OutputFile file(path);
  CsvOut csv(file.out());
  csv.text("link,direction,worker,host,start_s,end_s,bytes,utilization,capacity_bps").end_row();
  for (const auto& l : report.links) {
    for (size_t b = 0; b < l.bytes.size(); ++b) {
      const double start = report.bucket_start_s(b), end = report.bucket_end_s(b);
      const double capacity_bytes = l.capacity_in(b, end - start);
      const double utilization = capacity_bytes > 0 ? l.bytes[b] / capacity_bytes : 0;
      const double capacity_bps = end > start ? capacity_bytes * 8 / (end - start) : l.bandwidth_bps;
      csv.text(l.link).text(l.direction);
      (l.worker >= 0 ? csv.integer(l.worker) : csv.blank()).text(l.host);
      csv.g9(start).g9(end).g9(l.bytes[b]).fixed6(utilization).g9(capacity_bps).end_row();
    }
  }
  csv.flush();
  file.close();
}

LinkReport links_from_events(const Recorder& recorder, const std::vector<std::string>& hosts,
                             const std::vector<double>& up_bps, const std::vector<double>& down_bps, double bucket_s,
                             double end_s) {
  LinkReport report;
  report.end_s = end_s;
  report.bucket_s = bucket_width_s(bucket_s, end_s);
  const auto buckets = static_cast<size_t>(std::max(1.0, std::ceil(end_s / report.bucket_s)));
  for (size_t w = 0; w < hosts.size(); ++w) {
    for (const char* direction : {"up", "down"}) {
      LinkTraffic link;
      link.link = hosts[w] + "." + direction;
      link.direction = direction;
      link.worker = static_cast<int>(w);
      link.host = hosts[w];
      link.bandwidth_bps = std::string(direction) == "up" ? up_bps[w] : down_bps[w];
      link.bytes.assign(buckets, 0.0);
      report.links.push_back(std::move(link));
    }
  }
  for (const auto& e : recorder.events()) {
    if ((e.kind != EventKind::send && e.kind != EventKind::recv) || e.worker < 0 ||
        e.worker >= static_cast<int>(hosts.size()) || e.bytes <= 0) {
      continue;
    }
    LinkTraffic& link = report.links[2 * e.worker + (e.kind == EventKind::send ? 0 : 1)];
    const double span = std::max(e.end_s - e.start_s, 1e-12);
    for (size_t b = static_cast<size_t>(e.start_s / report.bucket_s); b < buckets; ++b) {
      const double overlap = std::min(e.end_s, report.bucket_end_s(b)) - std::max(e.start_s, report.bucket_start_s(b));
      if (report.bucket_start_s(b) >= e.end_s) break;
      if (overlap > 0 || e.end_s == e.start_s) link.bytes[b] += e.bytes * (e.end_s == e.start_s ? 1.0 : overlap / span);
    }
  }
  return report;
}

}  // namespace locosim
