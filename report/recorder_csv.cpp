// metrics.csv, exact_losses.csv, events.csv and updates.csv from a Recorder. Numbers are printed as %.9g
// (times, bytes) and %.6f (losses) print them (report/csv_out.hpp), so the same run always writes the
// same bytes.
#include "report/recorder_csv.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "report/csv_out.hpp"
#include "report/output_file.hpp"

namespace locosim {

namespace {

// A loss column: %.6f, empty where there is none (NaN).
void loss(CsvOut& csv, double v) { std::isnan(v) ? csv.blank() : csv.fixed6(v); }

std::string fmt_exact(double v) {
  if (std::isnan(v)) return "";
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::hex).ptr;
  return std::string(buf, end);
}

// Whether `text` is exactly one number, read into `value`.
template <class T, class... Format>
bool whole(std::string_view text, T& value, Format... format) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, format...);
  return ec == std::errc() && end == text.data() + text.size();
}

// The rows by worker, then in the order of `less` (stable), as pointers: a word per row rather than a
// copy of each (the rows of a run with thousands of workers take hundreds of MB). The rows are first
// dealt out by worker in one pass, and only each worker's own rows are sorted: a few hundred, nearly
// in order as recorded and close together, where one sort of all rows compares rows all over memory.
// The same order as one stable sort by (worker, less).
template <class Row, class Less>
std::vector<const Row*> by_worker_then(const std::vector<Row>& rows, Less less) {
  std::vector<const Row*> order(rows.size());
  if (rows.empty()) return order;
  const auto [lo, hi] = std::minmax_element(rows.begin(), rows.end(),
                                            [](const Row& a, const Row& b) { return a.worker < b.worker; });
  const int64_t lowest = lo->worker, workers = int64_t{hi->worker} - lowest + 1;
  const auto slot = [lowest](const Row& row) { return static_cast<size_t>(row.worker - lowest); };
  // starts[w]: where worker lowest + w's rows begin in `order`; starts[workers]: the end.
  std::vector<size_t> starts(static_cast<size_t>(workers) + 1, 0);
  for (const Row& row : rows) ++starts[slot(row) + 1];
  for (size_t w = 1; w < starts.size(); ++w) starts[w] += starts[w - 1];
  std::vector<size_t> fill(starts.begin(), starts.end() - 1);
  for (const Row& row : rows) order[fill[slot(row)]++] = &row;
  const auto by_less = [&](const Row* a, const Row* b) { return less(*a, *b); };
  for (size_t w = 0; w + 1 < starts.size(); ++w) {
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(starts[w]);
    const auto last = order.begin() + static_cast<std::ptrdiff_t>(starts[w + 1]);
    // Mostly recorded in order already (a worker's steps always are): one look, not a sort.
    if (!std::is_sorted(first, last, by_less)) std::stable_sort(first, last, by_less);
  }
  return order;
}

// Asks for the row a few places after row i of `rows` to be fetched. Rows are written by worker, and
// one worker's rows lie among every other worker's, as they were recorded: at thousands of workers
// each row is a fetch from memory, which the writer would otherwise wait for one after the other.
// Both ends of it: a row (40 or 56 bytes) often straddles two cache lines, and fetching only the
// first left the writer waiting on the second (write_events_csv of the relay's 4.1 M rows at 4096
// workers x 100 rounds: 0.52-0.62 s with one fetch a row, 0.37-0.51 s with two, in turns).
template <class Row>
void prefetch_ahead(const std::vector<const Row*>& rows, size_t i) {
  constexpr size_t kAhead = 16;
  if (i + kAhead >= rows.size()) return;
  const char* row = reinterpret_cast<const char*>(rows[i + kAhead]);
  __builtin_prefetch(row);
  __builtin_prefetch(row + sizeof(Row) - 1);
}

std::vector<const MetricRow*> by_worker_and_step(const Recorder& recorder) {
  return by_worker_then(recorder.metrics(), [](const MetricRow& a, const MetricRow& b) { return a.step < b.step; });
}

}  // namespace

void write_metrics_csv(const Recorder& recorder, const std::string& path) {
  OutputFile file(path);
  CsvOut csv(file.out());
  csv.text("time_s,worker,step,tokens,train_loss,eval_loss,sync").end_row();
  const std::vector<const MetricRow*> rows = by_worker_and_step(recorder);
  for (size_t i = 0; i < rows.size(); ++i) {
    prefetch_ahead(rows, i);
    const MetricRow& r = *rows[i];
    csv.g9(r.time_s).integer(r.worker).integer(r.step).integer(r.tokens);
    loss(csv, r.train_loss);
    loss(csv, r.eval_loss);
    csv.text(sync_name(r.sync)).end_row();
  }
  csv.flush();
  file.close();
}

void write_exact_losses_csv(const Recorder& recorder, const std::string& path) {
  OutputFile file(path);
  std::ostream& out = file.out();
  out << "worker,step,train_loss,eval_loss\n";
  for (const MetricRow* row : by_worker_and_step(recorder)) {
    const MetricRow& r = *row;
    out << r.worker << ',' << r.step << ',' << fmt_exact(r.train_loss) << ',' << fmt_exact(r.eval_loss) << '\n';
  }
  file.close();
}

ExactLosses read_exact_losses_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line != "worker,step,train_loss,eval_loss") {
    throw std::runtime_error(path + ": not an exact_losses.csv (header worker,step,train_loss,eval_loss)");
  }
  ExactLosses losses;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    std::vector<std::string_view> fields;
    for (size_t from = 0;;) {
      const size_t comma = line.find(',', from);
      fields.emplace_back(line.data() + from, (comma == std::string::npos ? line.size() : comma) - from);
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    int worker = -1;
    int64_t step = -1;
    double loss[2] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
    bool ok = fields.size() == 4 && whole(fields[0], worker) && whole(fields[1], step);
    for (int i = 0; ok && i < 2; ++i) ok = fields[2 + i].empty() || whole(fields[2 + i], loss[i], std::chars_format::hex);
    if (!ok || !losses.emplace(std::pair{worker, step}, std::pair{loss[0], loss[1]}).second) {
      throw std::runtime_error(path + ":" + std::to_string(line_no) + ": malformed or repeated row: " + line);
    }
  }
  return losses;
}

void write_events_csv(const Recorder& recorder, const std::string& path) {
  // A total order: rows that tie on time come out the same whichever was recorded first (SimGrid may
  // hand simultaneous completions to their actors in either order).
  const auto rows = by_worker_then(recorder.events(), [](const EventRow& a, const EventRow& b) {
    return std::tie(a.start_s, a.end_s, a.kind, a.peer, a.bytes) < std::tie(b.start_s, b.end_s, b.kind, b.peer, b.bytes);
  });
  OutputFile file(path);
  CsvOut csv(file.out());
  csv.text("worker,kind,start_s,end_s,bytes,peer").end_row();
  for (size_t i = 0; i < rows.size(); ++i) {
    prefetch_ahead(rows, i);
    const EventRow& r = *rows[i];
    csv.integer(r.worker).text(event_kind_name(r.kind)).g9(r.start_s).g9(r.end_s).g9(r.bytes);
    (r.peer >= 0 ? csv.integer(r.peer) : csv.blank()).end_row();
  }
  csv.flush();
  file.close();
}

void write_updates_csv(const std::vector<ServerUpdate>& updates, const std::string& path) {
  OutputFile file(path);
  CsvOut csv(file.out());
  csv.text("time_s,worker,version,staleness,steps").end_row();
  for (const auto& u : updates) {
    csv.g9(u.time_s).integer(u.worker).integer(u.version).integer(u.staleness).integer(u.steps).end_row();
  }
  csv.flush();
  file.close();
}

}  // namespace locosim
