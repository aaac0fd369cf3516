// A strict reader for one YAML mapping of a scenario or platform file.
//
// Every getter checks the type and the constraint and throws ConfigError naming the file, line,
// column and dotted key ("train.steps: must be > 0, got 0"). finish() rejects keys nobody read, so a
// misspelled key is an error, never silently ignored. Every value read (given or defaulted) is also
// written to a resolved tree: resolved.yaml in the run folder is that tree.
// The header includes no YAML library: components parse their own config from a Section.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/error.hpp"

namespace locosim {

// An interval constraint on a number, printed in error messages ("must be > 0").
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;

  static Range any() { return {}; }
  static Range positive() { return {0, std::numeric_limits<double>::infinity(), true, false}; }
  static Range non_negative() { return {0, std::numeric_limits<double>::infinity(), false, false}; }
  static Range at_least(double v) { return {v, std::numeric_limits<double>::infinity(), false, false}; }
  static Range closed(double a, double b) { return {a, b, false, false}; }
  static Range open_closed(double a, double b) { return {a, b, true, false}; }
  static Range closed_open(double a, double b) { return {a, b, false, true}; }

  bool contains(double v) const;
  std::string describe() const;  // "> 0", ">= 1", "in [0, 1)"
};

// Physical quantities written with a unit suffix ("100 Mbps", "20 ms", "989 TFLOPS", "4 GiB").
enum class Quantity { bandwidth_bps, duration_s, flops, bytes };

// Scenario and platform files are small: anything larger is a mistake (a corpus named as a scenario).
constexpr uintmax_t kMaxYamlFileBytes = 16u << 20;

// "" if `path` is a regular file (symbolic links followed) of at most max_bytes, else why not ("does not
// exist", "is a FIFO, not a regular file", "is 20000000 bytes, more than the 16 MiB allowed"). Looks at the
// file's status only: a FIFO or a device is refused without being opened (opening a FIFO blocks).
std::string regular_file_problem(const std::string& path, uintmax_t max_bytes);

// Scenario names and policy labels name folders: a letter or digit, then letters, digits, '.', '_' or
// '-', at most 64 characters (so no "", ".", "..", hidden names or paths).
bool is_identifier(const std::string& text);

// A value given on the command line in place of a file's: `--set dotted.key=value`.
struct Override {
  std::string key;     // where, as a sweep key (config/dotted_key.hpp): train.steps, policies[diloco].outer_lr
  std::string value;   // YAML text: a scalar ("1 Gbps", "3"), a flow list or mapping ("[1, 2]"); "" or null: the default
  std::string option;  // as messages name it: "--set train.steps=3"
};

// Reads the text of one `--set` ("train.steps=3": the key up to the first '='). Throws
// std::invalid_argument naming the option when there is no '=' or no key.
Override parse_override(const std::string& text);

class Section {
 public:
  // Loads a YAML file whose top level must be a mapping: a regular file of at most kMaxYamlFileBytes
  // holding one YAML document. Throws ConfigError (missing or odd file, syntax, a second document).
  static Section load_file(const std::string& path);
  // Parses YAML text (one document); `file` names it in messages (tests use this).
  static Section load_string(const std::string& yaml, const std::string& file);

  Section(const Section&);
  Section& operator=(const Section&);
  ~Section();

  const std::string& file() const;
  const std::string& path() const;  // dotted key of this section ("" at the top, "policies[1]")
  std::string key_path(const std::string& key) const;  // "train.steps"
  bool has(const std::string& key) const;
  bool is_mapping(const std::string& key) const;  // present and a mapping (not a scalar or list)
  bool is_list(const std::string& key) const;     // present and a sequence

  // Typed getters. Without a default the key is required.
  int64_t integer(const std::string& key, std::optional<int64_t> fallback = std::nullopt,
                  Range range = Range::any());
  // An integer in [0, 2^64 - 1], the whole range of a seed.
  uint64_t unsigned_integer(const std::string& key, std::optional<uint64_t> fallback = std::nullopt);
  double number(const std::string& key, std::optional<double> fallback = std::nullopt,
                Range range = Range::any());
  bool flag(const std::string& key, std::optional<bool> fallback = std::nullopt);
  std::string text(const std::string& key, std::optional<std::string> fallback = std::nullopt);
  std::string choice(const std::string& key, const std::vector<std::string>& allowed,
                     std::optional<std::string> fallback = std::nullopt);
  // A string that names a folder: is_identifier() must hold (the fallback too).
  std::string identifier(const std::string& key, std::optional<std::string> fallback = std::nullopt);
  std::vector<double> numbers(const std::string& key, size_t count, std::optional<std::vector<double>> fallback,
                              Range range = Range::any());
  // A list of 1 to max_count distinct integers, each in [0, 2^64 - 1] (seeds). Required.
  std::vector<uint64_t> unsigned_integers(const std::string& key, size_t max_count);
  // A quantity with its unit, in the base unit of its kind (bits/s, seconds, FLOP/s, bytes).
  double quantity(const std::string& key, Quantity kind, std::optional<std::string> fallback = std::nullopt,
                  Range range = Range::positive());
  // A path; relative paths are resolved against the folder of this file. Existence is not checked.
  std::string file_path(const std::string& key, std::optional<std::string> fallback = std::nullopt);

  // A nested mapping. Required unless `optional` (then an absent key yields an empty section).
  Section child(const std::string& key, bool optional = false);
  // A sequence of mappings ("policies: [{name: ddp}, ...]"); a bare scalar item `x` reads as
  // {<scalar_key>: x} when scalar_key is given, so "- ddp" means "- name: ddp".
  std::vector<Section> list(const std::string& key, const std::string& scalar_key = "", bool optional = false);
  // A mapping whose keys are names chosen by the user ("accelerators: {h100: {...}}").
  std::vector<std::pair<std::string, Section>> named(const std::string& key, bool optional = false);

  // `key` maps keys of this section to lists of values (a grid: tune: {outer_lr: [0.5, 1.0]}). One copy
  // of this section per point of the grid (the first key varying slowest), holding that point's values
  // in place of those keys and not `key` itself; the values keep their positions, so an error in a
  // copy names the value's line. Each copy has a resolved tree of its own (set_resolved_list puts them
  // in place). Throws ConfigError at the grid: not a mapping of lists of scalars, a value listed twice,
  // a key both set and in the grid, or more than max_points points.
  struct Variant;
  std::vector<Variant> grid(const std::string& key, size_t max_points);
  // Puts `value` (a scalar) at `key` of this section's own mapping: a grid's copy gets its label so.
  void set_text(const std::string& key, const std::string& value);
  // The resolved list at `key` becomes the resolved trees of `items` (a list whose items were replaced
  // by the copies of their grids).
  void set_resolved_list(const std::string& key, const std::vector<Section>& items);

  // Puts each override's value at its key in this section's tree (before anything is read, so that every
  // check applies to it as to the file's values). An error at a value put there names the option where a
  // file's value names file:line:column ("--set train.stepz=3: train.stepz: unknown key ..."). Throws
  // ConfigError naming the option when its key reaches nothing (a list item that does not exist) or its
  // value is not YAML.
  void apply_overrides(const std::vector<Override>& overrides);

  // Throws ConfigError at `key` (or at this section when the key is absent).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  // The same error, not thrown: for a check that can only be made later (by another program).
  ConfigError error(const std::string& key, const std::string& message) const;
  // Throws ConfigError for the first key nobody read: "unknown key 'stpes' (known here: ...)".
  void finish() const;

  // The resolved tree as YAML text (call on the top section).
  std::string resolved_yaml() const;
  // Puts another file's resolved tree under `key` of this one (a platform file inside its scenario).
  void adopt_resolved(const std::string& key, const Section& other);

 struct Impl;  // opaque: holds the YAML node, the resolved tree and the keys read
  explicit Section(std::shared_ptr<Impl> impl);

 private:
  std::shared_ptr<Impl> impl_;
};

struct Section::Variant {
  Section section;
  std::vector<std::pair<std::string, std::string>> values;  // (key, value as written), in the grid's order
};

// Parses "100 Mbps" and friends; std::nullopt with `why` filled when the text is not such a quantity.
std::optional<double> parse_quantity(const std::string& text, Quantity kind, std::string* why = nullptr);
// The base-unit name and the accepted suffixes of a kind, for messages and docs.
std::string quantity_units(Quantity kind);

// For an integer option of a command line (both CLIs): "" when `text` is an integer in [lo, hi], else
// the constraint in the words a file's value gets ("must be an integer in [1, 1024], got '0'"), for
// the CLI to put after the option's name. (CLI11's own range checks print their bounds as doubles,
// 150 digits long.)
std::string integer_option_problem(const std::string& text, int64_t lo, int64_t hi);

}  // namespace locosim
