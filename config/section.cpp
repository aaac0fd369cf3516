// Section: strict, position-aware reading of a YAML mapping (see section.hpp).
#include "config/section.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "config/dotted_key.hpp"
#include "config/error.hpp"
#include "config/nearest.hpp"
#include "config/section_impl.hpp"

namespace locosim {

using namespace section_detail;

namespace {

namespace fs = std::filesystem;

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// Edit distance, for "did you mean" hints on misspelled keys.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The candidate closest to `word`, if it is a near miss (fewer than 3 edits): "" otherwise.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string closest;
  size_t best = 3;
  for (const auto& c : candidates) {
    const size_t d = distance(word, c);
    if (d < best) best = d, closest = c;
  }
  return closest;
}

// Whether `inner` is `outer` or lies under it ("a.b[1].c" under "a.b[1]" and "a.b", not under "a.bc").
bool within(const std::string& inner, const std::string& outer) {
  return inner.rfind(outer, 0) == 0 && (inner.size() == outer.size() || inner[outer.size()] == '.' || inner[outer.size()] == '[');
}

// The --set option whose value is at `dotted` (or holds it, or was put under it: a key it created), if
// any. Only nodes it made have no position (the file's all have one).
const std::string* option_at(const Section::Impl& s, const YAML::Mark& mark, const std::string& dotted) {
  if (!mark.is_null()) return nullptr;
  const std::string* found = nullptr;
  for (const auto& [path, option] : *s.overridden) {
    if (within(dotted, path) || within(path, dotted)) found = &option;  // the last one set it
  }
  return found;
}

}  // namespace

namespace section_detail {

std::string describe_node(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

ConfigError error_at(const Section::Impl& s, const YAML::Mark& mark, const std::string& key,
                     const std::string& message) {
  std::string dotted = key.empty() ? s.path : (s.path.empty() ? key : s.path + "." + key);
  if (const std::string* option = option_at(s, mark, dotted)) return ConfigError(*option, 0, 0, dotted, message);
  return ConfigError(s.file, mark.line + 1, mark.column + 1, dotted, message);
}

[[noreturn]] void fail_at(const Section::Impl& s, const YAML::Mark& mark, const std::string& key,
                          const std::string& message) {
  throw error_at(s, mark, key, message);
}

// The value at `key`, or an undefined node. Iterates instead of operator[] so nothing is inserted.
YAML::Node lookup(Section::Impl& s, const std::string& key) {
  s.asked.insert(key);
  if (s.node.IsMap()) {
    for (auto it = s.node.begin(); it != s.node.end(); ++it) {
      if (it->first.Scalar() == key) return it->second;
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

YAML::Node require_scalar(Section::Impl& s, const std::string& key, const YAML::Node& n, const char* what) {
  if (!n.IsScalar()) fail_at(s, n.Mark(), key, std::string("must be ") + what + ", got " + describe_node(n));
  return n;
}

}  // namespace section_detail

namespace {

// `parent`: the section this one is part of, whose overridden values it shares (nullptr: a tree's top).
std::shared_ptr<Section::Impl> make_impl(const Section::Impl* parent, const std::string& file, const std::string& path,
                                         YAML::Node node, YAML::Mark mark, YAML::Node resolved) {
  auto impl = std::make_shared<Section::Impl>();
  if (parent) impl->overridden = parent->overridden;
  impl->file = file;
  impl->path = path;
  impl->node = node;
  impl->mark = mark;
  impl->resolved = resolved;
  // yaml-cpp keeps the last of two equal keys; a duplicate is almost always a mistake.
  if (node.IsMap()) {
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!seen.insert(it->first.Scalar()).second) {
        fail_at(*impl, it->first.Mark(), it->first.Scalar(), "duplicate key");
      }
    }
  }
  return impl;
}

// "16 MiB", "1 GiB", or bytes when the limit is not a whole number of either.
std::string format_bytes(uintmax_t bytes) {
  if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// Records where each document of a YAML stream starts (its '---' when it has one).
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;
  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Where a second document starts, if the text has one. yaml-cpp's parser can report endless empty
// documents without moving on (a lone ','; YAML::LoadAll then never returns): a "document" that
// starts where the previous one did is not a second one.
std::optional<YAML::Mark> second_document(const std::string& yaml) {
  std::istringstream in(yaml);
  YAML::Parser parser(in);
  DocumentStarts starts;
  while (starts.marks.size() < 2 && parser.HandleNextDocument(starts)) {
  }
  if (starts.marks.size() < 2 || starts.marks[1].pos <= starts.marks[0].pos) return std::nullopt;
  return starts.marks[1];
}

}  // namespace

std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates) {
  return nearest(word, candidates);
}

std::string regular_file_problem(const std::string& path, uintmax_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // follows symbolic links; opens nothing
  switch (status.type()) {
    case fs::file_type::regular: break;
    case fs::file_type::not_found: return "does not exist";
    case fs::file_type::directory: return "is a directory, not a file";
    case fs::file_type::fifo: return "is a FIFO (named pipe), not a regular file";
    case fs::file_type::character:
    case fs::file_type::block: return "is a device, not a regular file";
    case fs::file_type::socket: return "is a socket, not a regular file";
    case fs::file_type::none: return "cannot be examined (" + ec.message() + ")";
    default: return "is not a regular file";
  }
  const uintmax_t bytes = fs::file_size(path, ec);
  if (ec) return "cannot be examined (" + ec.message() + ")";
  if (bytes > max_bytes) {
    return "is " + std::to_string(bytes) + " bytes, more than the " + format_bytes(max_bytes) + " allowed";
  }
  return "";
}

bool is_identifier(const std::string& text) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (text.empty() || text.size() > 64 || !alnum(text[0])) return false;
  return std::all_of(text.begin(), text.end(), [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

bool Range::contains(double v) const {
  if (lo_open ? !(v > lo) : !(v >= lo)) return false;
  if (hi_open ? !(v < hi) : !(v <= hi)) return false;
  return true;
}

std::string Range::describe() const {
  bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  if (has_lo && !has_hi) return (lo_open ? "> " : ">= ") + format_number(lo);
  if (!has_lo && has_hi) return (hi_open ? "< " : "<= ") + format_number(hi);
  if (!has_lo && !has_hi) return "any number";
  return std::string("in ") + (lo_open ? "(" : "[") + format_number(lo) + ", " + format_number(hi) +
         (hi_open ? ")" : "]");
}

Section::Section(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Section::Section(const Section&) = default;
Section& Section::operator=(const Section&) = default;
Section::~Section() = default;

Section Section::load_file(const std::string& path) {
  // Checked before opening: a FIFO would block the open, /dev/zero would be read until memory runs out.
  const std::string problem = regular_file_problem(path, kMaxYamlFileBytes);
  if (problem == "does not exist") throw ConfigError(path, 0, 0, "", "cannot be read (does the file exist?)");
  if (!problem.empty()) throw ConfigError(path, 0, 0, "", problem + "; a scenario or platform is a YAML text file");
  std::ifstream in(path);
  if (!in) throw ConfigError(path, 0, 0, "", "cannot be read (check its permissions)");
  std::stringstream text;
  text << in.rdbuf();
  return load_string(text.str(), path);
}

Section Section::load_string(const std::string& yaml, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);  // the first document
    if (const std::optional<YAML::Mark> start = second_document(yaml)) {
      throw ConfigError(file, start->line + 1, start->column + 1, "",
                        "a second YAML document starts here, and only the first would be read: remove this '---' "
                        "and merge its keys into the first document, or move them to a file of their own");
    }
  } catch (const YAML::Exception& e) {
    throw ConfigError(file, e.mark.line + 1, e.mark.column + 1, "", "invalid YAML: " + e.msg);
  }
  if (!root.IsMap()) {
    int line = root.IsNull() ? 0 : root.Mark().line + 1;
    int column = root.IsNull() ? 0 : root.Mark().column + 1;
    throw ConfigError(file, line, column, "", "expected a mapping of keys at the top level, got " + describe_node(root));
  }
  return Section(make_impl(nullptr, file, "", root, root.Mark(), YAML::Node(YAML::NodeType::Map)));
}

const std::string& Section::file() const { return impl_->file; }
const std::string& Section::path() const { return impl_->path; }
std::string Section::key_path(const std::string& key) const {
  return impl_->path.empty() ? key : impl_->path + "." + key;
}
bool Section::has(const std::string& key) const {
  impl_->mentioned.insert(key);  // an optional key the parser reads only when present is still known here
  if (!impl_->node.IsMap()) return false;
  for (auto it = impl_->node.begin(); it != impl_->node.end(); ++it) {
    if (it->first.Scalar() == key) return true;
  }
  return false;
}

bool Section::is_mapping(const std::string& key) const {
  if (!impl_->node.IsMap()) return false;
  for (auto it = impl_->node.begin(); it != impl_->node.end(); ++it) {
    if (it->first.Scalar() == key) return it->second.IsMap();
  }
  return false;
}

bool Section::is_list(const std::string& key) const {
  if (!impl_->node.IsMap()) return false;
  for (auto it = impl_->node.begin(); it != impl_->node.end(); ++it) {
    if (it->first.Scalar() == key) return it->second.IsSequence();
  }
  return false;
}

void Section::fail(const std::string& key, const std::string& message) const { throw error(key, message); }

void Section::apply_overrides(const std::vector<Override>& overrides) {
  for (const Override& o : overrides) {
    YAML::Node value;
    try {
      value = YAML::Load(o.value);  // as the file's text would read: "3", "1 Gbps", "[1, 2]", "" (the default)
    } catch (const YAML::Exception& e) {
      throw ConfigError(o.option, 0, 0, o.key, "invalid YAML value: " + e.msg);
    }
    std::vector<std::string> places;
    try {
      places = put_at_key(impl_->node, split_dotted_key(o.key), value);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(o.option, 0, 0, "", e.what());
    }
    for (const std::string& place : places) {
      impl_->overridden->emplace_back(impl_->path.empty() ? place : impl_->path + "." + place, o.option);
    }
  }
}

std::vector<Section::Variant> Section::grid(const std::string& key, size_t max_points) {
  const YAML::Node g = lookup(*impl_, key);
  const std::string shape = "must map keys of this entry to lists of values, e.g. {outer_lr: [0.5, 0.7, 1.0]}";
  if (!g.IsMap() || g.size() == 0) fail_at(*impl_, g.IsDefined() ? g.Mark() : impl_->mark, key, shape);
  std::vector<std::pair<std::string, YAML::Node>> axes;
  size_t points = 1;
  for (auto it = g.begin(); it != g.end(); ++it) {
    const std::string name = it->first.Scalar();
    const std::string at = key + "." + name;
    if (name == key || name == "name" || name == "label") fail_at(*impl_, it->first.Mark(), at, "cannot be tuned");
    if (has(name)) fail_at(*impl_, it->first.Mark(), at, "is also set in the entry: give its values in one place");
    const YAML::Node list = it->second;
    if (!list.IsSequence() || list.size() == 0) fail_at(*impl_, list.Mark(), at, "must be a non-empty list of values");
    std::set<std::string> seen;
    for (const YAML::Node& v : list) {
      if (!v.IsScalar()) fail_at(*impl_, v.Mark(), at, "values must be scalars, got " + describe_node(v));
      if (!seen.insert(v.Scalar()).second) fail_at(*impl_, v.Mark(), at, "value " + v.Scalar() + " is listed twice");
    }
    points *= list.size();
    if (points > max_points) {
      fail_at(*impl_, g.Mark(), key, "has more than " + std::to_string(max_points) + " points: tune fewer values");
    }
    axes.emplace_back(name, list);
  }
  std::vector<Variant> out;
  for (size_t n = 0; n < points; ++n) {
    YAML::Node copy(YAML::NodeType::Map);
    for (auto it = impl_->node.begin(); it != impl_->node.end(); ++it) {
      if (it->first.Scalar() != key) copy[it->first.Scalar()] = it->second;  // the same node: its position
    }
    std::vector<std::pair<std::string, std::string>> values(axes.size());
    size_t rest = n;
    for (size_t i = axes.size(); i-- > 0;) {  // n in mixed radix, the last key varying fastest
      const YAML::Node value = axes[i].second[rest % axes[i].second.size()];
      rest /= axes[i].second.size();
      copy[axes[i].first] = value;
      values[i] = {axes[i].first, value.Scalar()};
    }
    out.push_back({Section(make_impl(impl_.get(), impl_->file, impl_->path, copy, impl_->mark, YAML::Node(YAML::NodeType::Map))),
                   std::move(values)});
  }
  return out;
}

void Section::set_text(const std::string& key, const std::string& value) {
  // Removed first: assigning to the handle would rewrite the node it shares with the entry it copies.
  impl_->node.remove(key);
  impl_->node[key] = value;
}

void Section::set_resolved_list(const std::string& key, const std::vector<Section>& items) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const Section& item : items) list.push_back(item.impl_->resolved);
  impl_->resolved[key] = list;
}

ConfigError Section::error(const std::string& key, const std::string& message) const {
  impl_->asked.insert(key);
  YAML::Node n = key.empty() ? YAML::Node(YAML::NodeType::Undefined) : lookup(*impl_, key);
  return error_at(*impl_, n.IsDefined() ? n.Mark() : impl_->mark, key, message);
}

Section Section::child(const std::string& key, bool optional) {
  YAML::Node n = lookup(*impl_, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (!optional) fail(key, "is required (a mapping)");
    impl_->resolved[key] = YAML::Node(YAML::NodeType::Map);
    return Section(make_impl(impl_.get(), impl_->file, key_path(key), YAML::Node(YAML::NodeType::Null), impl_->mark,
                             impl_->resolved[key]));
  }
  if (!n.IsMap()) fail_at(*impl_, n.Mark(), key, "must be a mapping of keys, got " + describe_node(n));
  impl_->resolved[key] = YAML::Node(YAML::NodeType::Map);
  return Section(make_impl(impl_.get(), impl_->file, key_path(key), n, n.Mark(), impl_->resolved[key]));
}

std::vector<Section> Section::list(const std::string& key, const std::string& scalar_key, bool optional) {
  YAML::Node n = lookup(*impl_, key);
  std::vector<Section> out;
  impl_->resolved[key] = YAML::Node(YAML::NodeType::Sequence);
  if (!n.IsDefined() || n.IsNull()) {
    if (!optional) fail(key, "is required (a list)");
    return out;
  }
  if (!n.IsSequence()) fail_at(*impl_, n.Mark(), key, "must be a list, got " + describe_node(n));
  YAML::Node resolved = impl_->resolved[key];
  for (size_t i = 0; i < n.size(); ++i) {
    YAML::Node item = n[i];
    std::string path = key_path(key) + "[" + std::to_string(i) + "]";
    if (item.IsScalar() && !scalar_key.empty()) {
      YAML::Node wrapped(YAML::NodeType::Map);
      wrapped[scalar_key] = item;
      item = wrapped;
    }
    if (!item.IsMap()) {
      fail_at(*impl_, item.Mark(), key + "[" + std::to_string(i) + "]", "must be a mapping of keys, got " + describe_node(item));
    }
    resolved.push_back(YAML::Node(YAML::NodeType::Map));
    out.push_back(Section(make_impl(impl_.get(), impl_->file, path, item, n[i].Mark(), resolved[resolved.size() - 1])));
  }
  return out;
}

std::vector<std::pair<std::string, Section>> Section::named(const std::string& key, bool optional) {
  YAML::Node n = lookup(*impl_, key);
  std::vector<std::pair<std::string, Section>> out;
  impl_->resolved[key] = YAML::Node(YAML::NodeType::Map);
  if (!n.IsDefined() || n.IsNull()) {
    if (!optional) fail(key, "is required (a mapping of names)");
    return out;
  }
  if (!n.IsMap()) fail_at(*impl_, n.Mark(), key, "must be a mapping of names, got " + describe_node(n));
  Section inner(make_impl(impl_.get(), impl_->file, key_path(key), n, n.Mark(), impl_->resolved[key]));
  for (auto it = n.begin(); it != n.end(); ++it) {
    out.emplace_back(it->first.Scalar(), inner.child(it->first.Scalar()));
  }
  return out;
}

void Section::finish() const {
  if (!impl_->node.IsMap()) return;
  for (auto it = impl_->node.begin(); it != impl_->node.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (impl_->asked.count(key)) continue;
    std::set<std::string> keys = impl_->asked;
    keys.insert(impl_->mentioned.begin(), impl_->mentioned.end());
    std::string known;
    for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
    const std::string closest = nearest(key, {keys.begin(), keys.end()});
    std::string hint = closest.empty() ? "" : "; did you mean '" + closest + "'?";
    fail_at(*impl_, it->first.Mark(), key, "unknown key (known here: " + known + ")" + hint);
  }
}

void Section::adopt_resolved(const std::string& key, const Section& other) {
  impl_->resolved[key] = other.impl_->resolved;
}

std::string Section::resolved_yaml() const {
  YAML::Emitter out;
  out.SetDoublePrecision(12);  // 0.35, not 0.34999999999999998
  out << impl_->resolved;
  return std::string(out.c_str()) + "\n";
}

Override parse_override(const std::string& text) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw std::invalid_argument("--set " + text + ": write dotted.key=value, e.g. --set train.steps=300 or "
                                "--set 'platform.hosts[0].uplink.bandwidth=1 Gbps'");
  }
  const auto trimmed = [](std::string t) {  // "train.steps = 3" as the file would read it
    t.erase(0, t.find_first_not_of(" \t"));
    t.erase(t.find_last_not_of(" \t") + 1);
    return t;
  };
  return {trimmed(text.substr(0, equals)), trimmed(text.substr(equals + 1)), "--set " + text};
}

std::string integer_option_problem(const std::string& text, int64_t lo, int64_t hi) {
  const std::string constraint =
      "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + text + "'";
  const bool negative = !text.empty() && text[0] == '-';
  const std::optional<uint64_t> magnitude = parse_unsigned(negative ? text.substr(1) : text);
  if (!magnitude || *magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return constraint;
  const int64_t value = negative ? -static_cast<int64_t>(*magnitude) : static_cast<int64_t>(*magnitude);
  return value < lo || value > hi ? constraint : "";
}

}  // namespace locosim
