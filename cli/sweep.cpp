// load_sweep: resolves each sweep key against the scenario's YAML tree, then loads every grid point.
#include "cli/sweep.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "config/dotted_key.hpp"
#include "config/error.hpp"

namespace locosim {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxPoints = 10000;

constexpr size_t kMaxPointNameBytes = 200;

std::string sanitize(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isspace(c)) continue;
    out += std::isalnum(c) || c == '.' || c == '-' || c == '_' ? static_cast<char>(c) : '-';
  }
  return out;
}

// The message of a ConfigError without its "file:line:column: " (positions in generated text mean nothing).
std::string without_position(const ConfigError& e) {
  std::string prefix = e.file();
  if (e.line() > 0) prefix += ":" + std::to_string(e.line()) + ":" + std::to_string(e.column());
  prefix += ": ";
  const std::string what = e.what();
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

struct Axis {
  std::string key;
  std::string label;                                       // its part of point names
  YAML::Mark mark;
  std::vector<std::pair<std::string, YAML::Mark>> values;  // as written, with positions
};

[[noreturn]] void fail(const std::string& file, const YAML::Mark& mark, const std::string& key, const std::string& msg) {
  throw ConfigError(file, mark.line + 1, mark.column + 1, key.empty() ? "sweep" : "sweep." + key, msg);
}

YAML::Node tree_with(const std::string& path, const std::vector<std::pair<std::string, std::string>>& values) {
  YAML::Node root = YAML::LoadFile(path);
  root.remove("sweep");
  for (const auto& [key, value] : values) {
    std::vector<KeyPart> parts = split_dotted_key(key);
    if (parts.front().name == "platform" && parts.size() > 1 && root["platform"].IsScalar()) {
      // The key reaches into a platform file: carry that file's tree into the scenario. The file is
      // the one the scenario loaded (resolved as Section::file_path does: "a/../b" is "b", whether
      // or not a/ exists).
      fs::path file = fs::path(root["platform"].Scalar());
      if (file.is_relative()) file = fs::path(path).parent_path() / file;
      try {
        root["platform"] = YAML::LoadFile(file.lexically_normal().string());
      } catch (const YAML::Exception& e) {
        throw std::invalid_argument("the platform file '" + file.lexically_normal().string() +
                                    "' cannot be read: " + e.what());
      }
    }
    put_at_key(root, parts, YAML::Node(value));
  }
  return root;
}

}  // namespace

std::string apply_sweep_values(const std::string& path, const std::vector<std::pair<std::string, std::string>>& values) {
  try {
    YAML::Emitter out;
    out << tree_with(path, values);
    return std::string(out.c_str()) + "\n";
  } catch (const std::invalid_argument& e) {
    std::string keys;
    for (const auto& kv : values) keys += (keys.empty() ? "" : ", ") + kv.first;
    throw ConfigError(path, 0, 0, "sweep", "(" + keys + "): " + e.what());
  }
}

Scenario at_seed(const Scenario& scenario, uint64_t seed) {
  Scenario out = scenario;
  out.seed = seed;
  out.seeds = {seed};
  YAML::Node root = YAML::Load(scenario.resolved_yaml);
  root["seed"] = std::to_string(seed);
  root.remove("seeds");
  YAML::Emitter text;
  text.SetDoublePrecision(12);
  text << root;
  out.resolved_yaml = std::string(text.c_str()) + "\n";
  return out;
}

namespace {

// Each point becomes a point per seed (the seed varying fastest), unless the scenario runs at its
// own seed only.
void expand_seeds(Sweep& sweep, const std::string& path, std::optional<int64_t> count) {
  const Scenario& base = sweep.points.front().scenario;
  std::vector<uint64_t> seeds = base.seeds;
  if (count) {
    seeds.clear();
    for (int64_t i = 0; i < *count; ++i) seeds.push_back(base.seed + static_cast<uint64_t>(i));
  }
  if (seeds == std::vector<uint64_t>{base.seed}) return;
  if (base.timing_only) {  // no training: every seed's run would be the same run
    sweep.seeds_not_needed = seeds.size();
    return;
  }
  if (std::find(sweep.keys.begin(), sweep.keys.end(), "seed") != sweep.keys.end()) {
    throw ConfigError(path, 0, 0, "sweep.seed", "the scenario runs at several seeds (seeds: or --seeds): sweep the "
                                                "seed or list the seeds, not both");
  }
  std::vector<SweepPoint> points;
  for (const SweepPoint& point : sweep.points) {
    for (uint64_t seed : seeds) {
      SweepPoint p{(point.name.empty() ? "" : point.name + "+") + "seed=" + std::to_string(seed), point.values,
                   at_seed(point.scenario, seed), point.name, seed};
      p.values.emplace_back("seed", std::to_string(seed));
      points.push_back(std::move(p));
    }
  }
  sweep.points = std::move(points);
  sweep.keys.push_back("seed");
  sweep.seeded = true;
  sweep.seeds = seeds;
}

Sweep load_grid(const std::string& path, const std::vector<Override>& overrides);

}  // namespace

Sweep load_sweep(const std::string& path, std::optional<int64_t> seeds, const std::vector<Override>& overrides) {
  Sweep sweep = load_grid(path, overrides);
  expand_seeds(sweep, path, seeds);
  return sweep;
}

namespace {

// A --set may not change the sweep block (read from the file here) nor a key the sweep varies (one of
// the two would silently win).
void check_overrides_against_sweep(const YAML::Node& block, const std::vector<Override>& overrides) {
  for (const Override& o : overrides) {
    if (o.key == "sweep" || o.key.rfind("sweep.", 0) == 0) {
      throw ConfigError(o.option, 0, 0, o.key, "the sweep block is read from the file only: edit it there");
    }
    if (!block || !block.IsMap()) continue;
    for (auto it = block.begin(); it != block.end(); ++it) {
      if (it->first.Scalar() == o.key) {
        throw ConfigError(o.option, 0, 0, o.key, "is a key of the scenario's sweep, which gives its values: "
                                                 "remove it from the sweep, or this --set");
      }
    }
  }
}

Sweep load_grid(const std::string& path, const std::vector<Override>& overrides) {
  // everything outside the sweep block, with the file's positions (and the options' names)
  Scenario base = load_scenario(path, overrides);
  Sweep sweep;
  const YAML::Node root = YAML::LoadFile(path);
  const YAML::Node block = root["sweep"];
  check_overrides_against_sweep(block, overrides);
  if (!block) {
    sweep.points.push_back({"", {}, std::move(base)});
    return sweep;
  }

  std::vector<Axis> axes;
  std::set<std::string> labels;
  for (auto it = block.begin(); it != block.end(); ++it) {
    Axis axis{it->first.Scalar(), "", it->first.Mark(), {}};
    std::vector<KeyPart> parts;
    try {
      parts = split_dotted_key(axis.key);
    } catch (const std::invalid_argument& e) {
      fail(path, axis.mark, axis.key, e.what());
    }
    const YAML::Node list = it->second;
    if (!list.IsSequence() || list.size() == 0) {
      fail(path, list.Mark(), axis.key, "must be a non-empty list of values, e.g. [10 Mbps, 100 Mbps]");
    }
    std::set<std::string> seen;
    for (const YAML::Node& v : list) {
      if (!v.IsScalar()) fail(path, v.Mark(), axis.key, "values must be scalars (a number, a quantity, a word)");
      if (!seen.insert(sanitize(v.Scalar())).second) fail(path, v.Mark(), axis.key, "value '" + v.Scalar() + "' is listed twice");
      axis.values.emplace_back(v.Scalar(), v.Mark());
    }
    try {
      tree_with(path, {{axis.key, axis.values.front().first}});  // does the key name something?
    } catch (const std::invalid_argument& e) {
      fail(path, axis.mark, axis.key, e.what());
    }
    axis.label = parts.back().name;
    axes.push_back(std::move(axis));
  }
  if (axes.empty()) fail(path, block.Mark(), "", "must map at least one key to a list of values");
  for (auto& a : axes) {  // two keys ending alike (two bandwidths) are told apart by their whole key
    size_t same = std::count_if(axes.begin(), axes.end(), [&](const Axis& b) { return b.label == a.label; });
    if (same > 1) a.label = sanitize(a.key);
  }

  size_t total = 1;
  for (const auto& a : axes) {
    total *= a.values.size();
    if (total > kMaxPoints) fail(path, block.Mark(), "", "the grid has more than " + std::to_string(kMaxPoints) + " points");
  }
  for (const auto& a : axes) sweep.keys.push_back(a.key);
  for (size_t n = 0; n < total; ++n) {
    std::vector<size_t> pick(axes.size());  // n in mixed radix, the last key varying fastest
    size_t rest = n;
    for (size_t i = axes.size(); i-- > 0;) {
      pick[i] = rest % axes[i].values.size();
      rest /= axes[i].values.size();
    }
    SweepPoint point;
    for (size_t i = 0; i < axes.size(); ++i) {
      const std::string& value = axes[i].values[pick[i]].first;
      point.values.emplace_back(axes[i].key, value);
      point.name += (i ? "+" : "") + axes[i].label + "=" + sanitize(value);
    }
    if (point.name.size() > kMaxPointNameBytes) {  // it names a folder (file systems allow 255 bytes)
      fail(path, axes.back().mark, axes.back().key,
           "the point's folder name '" + point.name.substr(0, 60) + "...' is longer than " +
               std::to_string(kMaxPointNameBytes) + " characters; use shorter values or fewer keys");
    }
    try {
      point.scenario = load_scenario_text(apply_sweep_values(path, point.values), path, overrides);
    } catch (const ConfigError& e) {
      if (e.file().rfind("--set ", 0) == 0) throw;  // the option's value, at this point: it names itself
      // Blame the axis whose key ends like the rejected key ("...uplink.bandwidth"), else the last one.
      size_t blamed = axes.size() - 1;
      for (size_t i = 0; i < axes.size(); ++i) {
        const std::string& k = e.key();
        const std::string tail = split_dotted_key(axes[i].key).back().name;  // a copy: the parts are a temporary
        if (k.size() >= tail.size() && k.compare(k.size() - tail.size(), tail.size(), tail) == 0) blamed = i;
      }
      fail(path, axes[blamed].values[pick[blamed]].second, axes[blamed].key,
           "value '" + axes[blamed].values[pick[blamed]].first + "' at point " + point.name + ": " + without_position(e));
    }
    sweep.points.push_back(std::move(point));
  }
  return sweep;
}

}  // namespace
}  // namespace locosim
