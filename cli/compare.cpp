// compare_run_folders: the rows of two run folders, metric by metric (see compare.hpp).
#include "cli/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "report/summary.hpp"

namespace locosim {
namespace fs = std::filesystem;
namespace {

// summary.csv's labels, in its order (its first column); empty without the file.
std::vector<std::string> listed_labels(const fs::path& dir) {
  std::ifstream in(dir / "summary.csv");
  std::string line;
  std::vector<std::string> labels;
  if (!std::getline(in, line) || line.rfind("label,", 0) != 0) return labels;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '"') labels.push_back(line.substr(0, line.find(',')));  // labels are identifiers
  }
  return labels;
}

// The finished runs of a scenario, sweep point or policy folder: in summary.csv's order, then by name.
std::vector<RunSummary> rows_of(const std::string& dir) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw std::invalid_argument(dir + ": no such run folder");
  if (fs::exists(root / "summary.json")) return {read_summary_json((root / "summary.json").string())};
  std::vector<std::string> labels = listed_labels(root), found;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (fs::exists(entry.path() / "summary.json")) found.push_back(entry.path().filename().string());
  }
  std::sort(found.begin(), found.end());
  for (const auto& label : found) {
    if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
  }
  std::vector<RunSummary> rows;
  for (const auto& label : labels) {
    if (fs::exists(root / label / "summary.json")) rows.push_back(read_summary_json((root / label / "summary.json").string()));
  }
  if (rows.empty()) {
    throw std::invalid_argument(dir + ": not a run folder (no summary.json in it or in its policy folders; for a "
                                "sweep or several seeds, compare one point's folder: runs/<scenario>/<point>)");
  }
  return rows;
}

const RunSummary* find_label(const std::vector<RunSummary>& rows, const std::string& label) {
  for (const auto& r : rows) {
    if (r.label == label) return &r;
  }
  return nullptr;
}

// One line of the comparison: the metric's name, then A, B and the change, as text.
struct Line {
  std::string metric, a, b, change;
};

std::string ratio(double a, double b) { return a > 0 ? fmt::format("{:.2f}x", b / a) : "-"; }
std::string loss(const RunSummary& r, double v) { return r.timing_only || std::isnan(v) ? "no loss" : fmt::format("{:.3f}", v); }
std::string loss_change(const RunSummary& a, const RunSummary& b, double va, double vb) {
  if (a.timing_only || b.timing_only || std::isnan(va) || std::isnan(vb)) return "-";
  return fmt::format("{:+.3f}", vb - va);
}

std::vector<Line> lines_of(const RunSummary& a, const RunSummary& b) {
  std::vector<Line> out = {
      {"wall-clock", human_time(a.wall_clock_s), human_time(b.wall_clock_s), ratio(a.wall_clock_s, b.wall_clock_s)},
      {"compute util", fmt::format("{:.1f}%", 100 * a.compute_utilization), fmt::format("{:.1f}%", 100 * b.compute_utilization),
       fmt::format("{:+.1f} pt", 100 * (b.compute_utilization - a.compute_utilization))},
      {"MB sent per worker", fmt::format("{:.1f}", a.sent_bytes_per_worker / 1e6), fmt::format("{:.1f}", b.sent_bytes_per_worker / 1e6),
       ratio(a.sent_bytes_per_worker, b.sent_bytes_per_worker)},
      {"MB recv per worker", fmt::format("{:.1f}", a.recv_bytes_per_worker / 1e6), fmt::format("{:.1f}", b.recv_bytes_per_worker / 1e6),
       ratio(a.recv_bytes_per_worker, b.recv_bytes_per_worker)},
      {"train loss", loss(a, a.final_train_loss), loss(b, b.final_train_loss),
       loss_change(a, b, a.final_train_loss, b.final_train_loss)},
      {"eval loss", loss(a, a.final_eval_loss), loss(b, b.final_eval_loss), loss_change(a, b, a.final_eval_loss, b.final_eval_loss)},
  };
  if (a.target_loss || b.target_loss) {
    const auto reached = [](const RunSummary& r) {
      return !r.target_loss ? std::string("no target") : r.time_to_target_s ? human_time(*r.time_to_target_s) : "not reached";
    };
    const bool both = a.time_to_target_s && b.time_to_target_s;
    out.push_back({"time to target", reached(a), reached(b), both ? ratio(*a.time_to_target_s, *b.time_to_target_s) : "-"});
  }
  return out;
}

}  // namespace

std::string compare_run_folders(const std::string& run_a, const std::string& run_b) {
  const std::vector<RunSummary> a = rows_of(run_a), b = rows_of(run_b);
  std::vector<std::string> labels;
  for (const auto& r : a) labels.push_back(r.label);
  for (const auto& r : b) {
    if (!find_label(a, r.label)) labels.push_back(r.label);
  }
  // A policy folder against another: compared whatever their labels (ddp against diloco).
  const bool one_each = a.size() == 1 && b.size() == 1;
  size_t width = std::string("policy").size();
  for (const auto& l : labels) width = std::max(width, l.size());
  const size_t a_width = std::max<size_t>(10, std::string("A").size()), b_width = a_width;
  std::string out = fmt::format("A: {}\nB: {}\n\n", run_a, run_b);
  out += fmt::format("{:<{}}  {:<18}  {:>{}}  {:>{}}  {:>9}\n", "policy", width, "metric", "A", a_width, "B", b_width, "change");
  for (const auto& label : labels) {
    const RunSummary* ra = one_each ? &a.front() : find_label(a, label);
    const RunSummary* rb = one_each ? &b.front() : find_label(b, label);
    const std::string name = one_each && ra->label != rb->label ? ra->label + "/" + rb->label : label;
    if (!ra || !rb) {
      out += fmt::format("{:<{}}  only in {}\n", name, width, ra ? "A" : "B");
      continue;
    }
    bool first = true;
    for (const Line& line : lines_of(*ra, *rb)) {
      out += fmt::format("{:<{}}  {:<18}  {:>{}}  {:>{}}  {:>9}\n", first ? name : "", width, line.metric, line.a, a_width,
                         line.b, b_width, line.change);
      first = false;
    }
    if (one_each) break;
  }
  return out;
}

}  // namespace locosim
