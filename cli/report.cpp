// report_run_folder: the comparison tables of a finished run folder, read back from its files.
#include "cli/report.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <vector>

#include "report/seed_table.hpp"
#include "report/summary.hpp"

namespace locosim {
namespace fs = std::filesystem;
namespace {

std::string first_csv_field(const std::string& line) {
  if (line.empty() || line[0] != '"') return line.substr(0, line.find(','));
  std::string out;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out += '"', ++i;
    } else if (line[i] == '"') {
      break;
    } else {
      out += line[i];
    }
  }
  return out;
}

// The first column of a CSV file's rows (labels, or sweep points), in order; empty if no such file.
std::vector<std::string> first_column(const fs::path& csv, const std::string& header) {
  std::ifstream in(csv);
  std::string line;
  std::vector<std::string> out;
  if (!std::getline(in, line) || first_csv_field(line) != header) return out;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(first_csv_field(line));
  }
  return out;
}

// A point folder's finished runs, in summary.csv's order (else by name).
std::vector<RunSummary> point_rows(const fs::path& dir) {
  std::vector<std::string> labels = first_column(dir / "summary.csv", "label");
  if (labels.empty() && fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (fs::exists(entry.path() / "summary.json")) labels.push_back(entry.path().filename().string());
    }
    std::sort(labels.begin(), labels.end());
  }
  std::vector<RunSummary> rows;
  for (const auto& label : labels) {
    if (fs::exists(dir / label / "summary.json")) rows.push_back(read_summary_json((dir / label / "summary.json").string()));
  }
  return rows;
}

// A scenario folder's table: its policies in summary.csv's order, else in name order.
std::optional<std::string> scenario_table(const fs::path& dir) {
  std::vector<RunSummary> rows = point_rows(dir);
  if (rows.empty()) return std::nullopt;
  return format_table(rows);
}

// A run at several seeds (its seeds.csv): the points' folders grouped by their name without the seed
// ("bandwidth=10Mbps+seed=2" is point bandwidth=10Mbps at seed 2), a seed table per group.
std::optional<std::string> seeds_tables(const fs::path& root, const std::vector<std::string>& points) {
  if (!fs::exists(root / "seeds.csv")) return std::nullopt;
  std::vector<std::string> groups;
  std::vector<std::vector<uint64_t>> seeds;
  std::vector<std::vector<std::vector<RunSummary>>> tables;
  for (const auto& point : points) {
    const size_t at = point.rfind("seed=");
    if (at == std::string::npos || (at > 0 && point[at - 1] != '+')) continue;
    const std::string group = at == 0 ? "" : point.substr(0, at - 1);
    uint64_t seed = 0;
    try {
      seed = std::stoull(point.substr(at + 5));
    } catch (const std::exception&) {
      continue;
    }
    size_t g = std::find(groups.begin(), groups.end(), group) - groups.begin();
    if (g == groups.size()) groups.push_back(group), seeds.emplace_back(), tables.emplace_back();
    if (std::find(seeds[g].begin(), seeds[g].end(), seed) != seeds[g].end()) continue;  // a row per policy
    seeds[g].push_back(seed);
    tables[g].push_back(point_rows(root / point));
  }
  std::string out;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string table = format_seed_table(summarize_seeds(seeds[g], tables[g]));
    if (table.empty()) continue;
    out += (out.empty() ? "" : "\n") + (groups[g].empty() ? "" : "point " + groups[g] + "\n") + table;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::string report_run_folder(const std::string& dir) {
  const fs::path root(dir);
  if (fs::exists(root / "summary.json")) return format_table({read_summary_json((root / "summary.json").string())});
  std::vector<std::string> points = first_column(root / "summary.csv", "point");
  if (auto table = seeds_tables(root, points)) return *table;
  if (points.empty()) {
    if (auto table = scenario_table(root)) return *table;
  }
  if (points.empty() && fs::is_directory(root)) {
    for (const auto& entry : fs::directory_iterator(root)) {
      if (entry.is_directory()) points.push_back(entry.path().filename().string());
    }
    std::sort(points.begin(), points.end());
  }
  std::string out;
  std::vector<std::string> seen;
  for (const auto& point : points) {
    if (std::find(seen.begin(), seen.end(), point) != seen.end()) continue;  // a row per policy in summary.csv
    seen.push_back(point);
    if (auto table = scenario_table(root / point)) out += (out.empty() ? "" : "\n") + ("point " + point + "\n") + *table;
  }
  if (out.empty()) throw std::invalid_argument(dir + ": not a locosim run folder (no summary.json in it or below it)");
  return out;
}

}  // namespace locosim
