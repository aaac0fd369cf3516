// parse_world: the scenario's `world:` section (config/world.hpp), read strictly.
//
//   world:
//     failure_timeout: 10 s            # how long survivors wait on a failed collective, in [1 ms, 1 h]
//     events:                          # scripted changes; until omitted: for the rest of the run
//       - {host: vol-3, at: 10 min, until: 30 min, speed: 0.3}     # fraction of nominal, in [0.001, 100]
//       - {host: vol-5, at: 20 min, until: 40 min, state: off}     # away, back at until
//       - {link: vol-1.up, at: 1 h, until: 2 h, bandwidth: 0.5}    # fraction of nominal, in [0.001, 100]
//       - {link: wan.eu->us, at: 1 h, latency: 80 ms}              # absolute: 0 or in [1 ns, 1 h]
//     traces:                          # CSV files of `time_s,value` rows, next to the scenario
//       - {link: vol-7.up, bandwidth: traces/uplink.csv, period: 24 h}   # repeat (optional): >= 100 ms a row
//       - {host: vol-2, speed: traces/gpu.csv}
//     churn:                           # random failures: up ~ Exp(mtbf), away ~ Exp(mttr), each >= 1 s
//       - {hosts: ["vol-*"], mtbf: 2 h, mttr: 30 min, start: 0 s, seed: 7}
//
// Times are 0 or in [1 ns, 1e9 s]: SimGrid's clock resolves 1 ns, and a value nearer 0 than that (a
// subnormal double above all) would reach SimGrid's profile text and fail its parser mid-run.
//
// Each (target, resource) has one source: events, or one trace, or (host state) one churn group. Events
// on one (target, resource) may not overlap in time; they merge into one profile that returns to nominal
// at each until (unless the next event starts right then).
#include "config/world.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>

#include "config/error.hpp"
#include "config/section.hpp"
#include "config/trace_csv.hpp"

namespace locosim {
namespace {

// Bounds: a run is far shorter than 1e9 s (30 years); more entries or rows than these are a mistake
// (a generated file gone wrong), and each costs memory and SimGrid events.
constexpr double kMaxTimeS = 1e9;
constexpr size_t kMaxEvents = 100000;
constexpr size_t kMaxTraces = 10000;
constexpr size_t kMaxTraceRows = 1000000;          // per trace file
constexpr size_t kMaxAllTraceRows = 10000000;      // all trace files together
constexpr uintmax_t kMaxTraceBytes = 64u << 20;
constexpr size_t kMaxChurnPatterns = 10000;        // all churn groups' hosts entries together
constexpr size_t kListedNames = 5;                 // names shown when a host or link is unknown

constexpr double kMinTimeS = 1e-9;  // SimGrid's timing precision: nearer 0 than this reads as 0
// A repeating trace replays for the whole run, which no bound on the file limits: on average one change
// per 100 ms of simulated time at most (a period of 1 ns made millions of SimGrid events per step).
constexpr double kMinRepeatSpacingS = 0.1;

const Range kTimeRange = Range::closed(0, kMaxTimeS);
// Speed and bandwidth: 100× nominal at most; 1/1000 at least, as an accelerator's efficiency: slower is
// a host or link that is gone (state: off), and 1e-9 of nominal made wall-clocks of hundreds of digits.
const Range kFractionRange = Range::closed(1e-3, 100);
const Range kWorldLatencyRange = Range::closed(0, 3600);       // as the platform's links
const Range kFailureTimeoutRange = Range::closed(1e-3, 3600);
// Churn sessions shorter than a second are no volunteer's, and each is two SimGrid events per host.
const Range kChurnMeanRange = Range::closed(1, kMaxTimeS);

const double kOpen = std::numeric_limits<double>::infinity();  // an event without until

std::string seconds(double v) {
  if (std::isinf(v)) return "the end of the run";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g s", v);
  return buf;
}

// A time or latency in `range` that is 0 or at least kMinTimeS. "" if so, else the constraint broken.
std::string time_problem(double v, const Range& range) {
  if (!range.contains(v)) return "must be " + range.describe() + " s";
  if (v != 0 && v < kMinTimeS) return "must be 0 or at least 1 ns (the simulator's time resolution)";
  return "";
}

// A duration key read with time_problem's rule.
double read_time(Section& s, const std::string& key, std::optional<std::string> fallback, const Range& range) {
  const double v = s.quantity(key, Quantity::duration_s, std::move(fallback), range);
  const std::string problem = time_problem(v, range);
  if (!problem.empty()) s.fail(key, problem + ", got " + seconds(v));
  return v;
}

// "a, b, c, d, e, ... (12 in all)".
std::string some_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kListedNames; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kListedNames) out += ", ...";
  return out + " (" + std::to_string(names.size()) + " in all)";
}

// "file:line" where an entry starts. Section shows positions only in its errors, so this asks for one.
// Call it after the entry's finish(): fail("") counts "" as a key read.
std::string location(const Section& s) {
  try {
    s.fail("", "");
  } catch (const ConfigError& e) {
    return e.file() + ":" + std::to_string(e.line());
  }
}

// "world.events[2] (s.yaml:7)".
std::string label(const Section& s, const std::string& where) { return s.path() + " (" + where + ")"; }

// What the platform offers to change.
struct Platform {
  const PlatformSpec& spec;
  std::map<std::string, int> rank_of;            // worker name → rank
  std::vector<std::string> workers;              // by rank
  std::vector<std::string> links;                // link_names order
  std::map<std::string, LinkSpec> link_of;
};

Platform index(const PlatformSpec& spec) {
  Platform p{spec, {}, {}, {}, {}};
  for (size_t r = 0; r < spec.hosts.size(); ++r) {
    p.rank_of.emplace(spec.hosts[r].name, static_cast<int>(r));
    p.workers.push_back(spec.hosts[r].name);
  }
  for (const auto& [name, link] : platform_links(spec)) {
    p.links.push_back(name);
    p.link_of.emplace(name, link);
  }
  return p;
}

// The thing an entry changes: a host's or a link's resource, set by the entry's key `key`.
struct Target {
  std::string name;
  WorldResource what = WorldResource::host_speed;
  std::string key;
  bool is_host() const { return what == WorldResource::host_speed || what == WorldResource::host_state; }
  std::string describe() const {
    return std::string("the ") + resource_key(what) + " of " + (is_host() ? "host " : "link ") + name;
  }
};
using TargetKey = std::pair<std::string, WorldResource>;

void check_host(Section& s, const std::string& name, const Platform& p) {
  if (p.rank_of.count(name)) return;
  if (p.spec.relay && p.spec.relay->name == name) {
    s.fail("host", "'" + name + "' is the relay, not a worker: only workers compute and fail (its links can change, "
                       "with link:)");
  }
  s.fail("host", "host '" + name + "' is not a worker of platform '" + p.spec.file + "' (workers: " +
                     some_names(p.workers) + ")");
}

void check_link(Section& s, const std::string& name, const Platform& p) {
  if (p.link_of.count(name)) return;
  s.fail("link", "link '" + name + "' is not a link of platform '" + p.spec.file + "' (links: " + some_names(p.links) +
                     "; names are <host>.up/.down, <site>.lan.<host>.up/.down, <site>.up/.down, wan.<from>-><to>)");
}

// Reads host: or link: (exactly one) and finds the one resource key the entry sets; the caller reads
// its value (a number for an event, a file for a trace).
Target read_target(Section& s, const Platform& p) {
  const bool host = s.has("host"), link = s.has("link");
  if (host && link) s.fail("link", "give host or link, not both: one entry changes one thing");
  if (!host && !link) s.fail("", "needs host: (a worker's name) or link: (a link's name) to say what changes");
  Target t;
  t.name = s.text(host ? "host" : "link");
  if (host) {
    check_host(s, t.name, p);
  } else {
    check_link(s, t.name, p);
  }

  const std::vector<std::string> allowed = host ? std::vector<std::string>{"speed", "state"}
                                                 : std::vector<std::string>{"bandwidth", "latency", "state"};
  const std::string choices = host ? "speed or state" : "bandwidth, latency or state";
  std::vector<std::string> given;
  for (const char* key : {"speed", "bandwidth", "latency", "state"}) {
    if (s.has(key)) given.push_back(key);
  }
  if (given.empty()) {
    s.fail("", std::string(host ? "a host" : "a link") + " entry sets one of " + choices + ", got none (check the spelling)");
  }
  if (given.size() > 1) {
    s.fail(given[1], "sets one of " + choices + ", got both " + given[0] + " and " + given[1] + ": use one entry each");
  }
  t.key = given[0];
  if (std::find(allowed.begin(), allowed.end(), t.key) == allowed.end()) {
    s.fail(t.key, t.key + " is not something " + (host ? "a host" : "a link") + " has: it has " + choices);
  }
  if (host) {
    t.what = t.key == "speed" ? WorldResource::host_speed : WorldResource::host_state;
  } else {
    t.what = t.key == "bandwidth" ? WorldResource::link_bandwidth
             : t.key == "latency" ? WorldResource::link_latency
                                  : WorldResource::link_state;
  }
  return t;
}

double nominal(const Target& t, const Platform& p) {
  return t.what == WorldResource::link_latency ? p.link_of.at(t.name).latency_s : 1.0;
}

struct Event {
  Target target;
  double at = 0, until = kOpen, value = 0;
  Section section;
  std::string where;
};

Event read_event(Section& s, const Platform& p) {
  Event e{read_target(s, p), 0, kOpen, 0, s, ""};
  e.at = read_time(s, "at", std::nullopt, kTimeRange);
  if (s.has("until")) {
    e.until = read_time(s, "until", std::nullopt, kTimeRange);
    if (e.until <= e.at) s.fail("until", "must be after at (" + seconds(e.at) + "), got " + seconds(e.until));
  }
  switch (e.target.what) {
    case WorldResource::host_speed:
    case WorldResource::link_bandwidth:
      e.value = s.number(e.target.key, std::nullopt, kFractionRange);
      break;
    case WorldResource::link_latency:
      e.value = read_time(s, "latency", std::nullopt, kWorldLatencyRange);
      break;
    case WorldResource::host_state:
    case WorldResource::link_state: {
      const std::string state = s.text("state");
      if (state != "off") s.fail("state", "must be off, got '" + state + "': the event turns it off at `at`, back on at `until`");
      e.value = 0;
      break;
    }
  }
  s.finish();
  e.where = location(s);
  return e;
}

// The points of a trace file (config/trace_csv.hpp) for the entry's resource: times strictly
// increasing, before the period if it repeats, and values by the resource's rule. Errors are reported
// at the entry's key `key` (the file) and name the file's line; a time at or past the period is
// reported at `period`.
std::vector<std::pair<double, double>> read_trace(Section& s, const Target& t, const std::string& path,
                                                  double period_s, size_t* all_rows) {
  const bool state = t.what == WorldResource::host_state || t.what == WorldResource::link_state;
  const Range values = t.what == WorldResource::link_latency ? kWorldLatencyRange : kFractionRange;
  const std::string values_rule = state ? "1 (on) or 0 (off)"
                                  : t.what == WorldResource::link_latency ? "seconds, 0 or in [1e-9, 3600]"
                                                                          : "a fraction of nominal " + values.describe();
  std::vector<std::pair<double, double>> points;
  size_t previous_line = 0;
  read_trace_csv(s, t.key, path, kMaxTraceBytes, [&](const TraceRow& r) {
    const std::string time_rule = time_problem(r.time_s, kTimeRange);
    if (!time_rule.empty()) s.fail(t.key, r.at + "time " + time_rule + ", got " + seconds(r.time_s));
    if (!points.empty() && r.time_s <= points.back().first) {
      s.fail(t.key, r.at + "time " + seconds(r.time_s) + " is not after the previous row's " +
                        seconds(points.back().first) + " (line " + std::to_string(previous_line) +
                        "): times must strictly increase");
    }
    if (period_s >= 0 && r.time_s >= period_s) {
      s.fail("period", r.at + "time " + seconds(r.time_s) + " is not before the period (" + seconds(period_s) +
                           "): a repeating trace's times lie in [0, period)");
    }
    const bool bad_value = state ? (r.value != 0 && r.value != 1)
                           : t.what == WorldResource::link_latency ? !time_problem(r.value, values).empty()
                                                                   : !values.contains(r.value);
    if (bad_value) s.fail(t.key, r.at + "the " + t.key + " must be " + values_rule + ", got " + r.value_text);
    if (points.size() == kMaxTraceRows) s.fail(t.key, r.at + "more than " + std::to_string(kMaxTraceRows) + " rows");
    if (++*all_rows > kMaxAllTraceRows) {
      s.fail(t.key, r.at + "all traces together have more than " + std::to_string(kMaxAllTraceRows) + " rows");
    }
    points.emplace_back(r.time_s, r.value);
    previous_line = r.line;
  });
  if (points.empty()) s.fail(t.key, "trace '" + path + "' has no rows (expected rows 'time_s,value')");
  const double min_period_s = kMinRepeatSpacingS * static_cast<double>(points.size());
  if (period_s >= 0 && period_s < min_period_s * (1 - 1e-12)) {  // 1e-12: 300 ms is 3 rows' worth, rounded
    s.fail("period", "must be at least 100 ms per row of the trace ('" + path + "' has " +
                         std::to_string(points.size()) + ": at least " + seconds(min_period_s) + "), got " +
                         seconds(period_s) + ": a repeating trace replays for the whole run, and faster "
                         "changes would swamp the simulation with events");
  }
  return points;
}

struct Trace {
  Target target;
  WorldProfile profile;
  Section section;
  std::string where;
};

Trace read_trace_entry(Section& s, const Platform& p, size_t* all_rows) {
  Trace tr{read_target(s, p), {}, s, ""};
  const std::string path = s.file_path(tr.target.key);
  if (s.has("period")) {
    tr.profile.period_s = s.quantity("period", Quantity::duration_s, std::nullopt, Range::open_closed(0, kMaxTimeS));
  }
  s.finish();
  tr.where = location(s);
  tr.profile.target = tr.target.name;
  tr.profile.what = tr.target.what;
  tr.profile.points = read_trace(s, tr.target, path, tr.profile.period_s, all_rows);
  tr.profile.source = tr.where + " (trace " + path + ")";
  return tr;
}

// A churn entry's hosts: exact names, or a prefix and one trailing '*'; each matches some worker.
// Errors point at `hosts` itself: Section gives a list's scalar items no position of their own.
std::vector<int> read_churn_hosts(Section& s, const Platform& p, size_t* patterns) {
  std::vector<Section> items = s.list("hosts", "name");
  if (items.empty()) s.fail("hosts", "must list at least one host (a name, or a prefix and '*': \"vol-*\")");
  std::vector<bool> chosen(p.workers.size(), false);
  for (size_t i = 0; i < items.size(); ++i) {
    if (++*patterns > kMaxChurnPatterns) {
      s.fail("hosts", "more than " + std::to_string(kMaxChurnPatterns) + " hosts entries in all churn groups");
    }
    const std::string pattern = items[i].text("name");
    items[i].finish();
    const std::string which = "hosts[" + std::to_string(i) + "] '" + pattern + "'";
    const size_t star = pattern.find('*');
    if (star != std::string::npos && star + 1 != pattern.size()) {
      s.fail("hosts", which + ": '*' may only end a name (a prefix and one trailing '*', such as \"vol-*\")");
    }
    const std::string prefix = pattern.substr(0, star);
    bool matched = false;
    for (size_t r = 0; r < p.workers.size(); ++r) {
      const bool match = star == std::string::npos ? p.workers[r] == pattern : p.workers[r].rfind(prefix, 0) == 0;
      if (match) chosen[r] = matched = true;
    }
    if (!matched) s.fail("hosts", which + " matches no worker host (workers: " + some_names(p.workers) + ")");
  }
  std::vector<int> hosts;
  for (size_t r = 0; r < chosen.size(); ++r) {
    if (chosen[r]) hosts.push_back(static_cast<int>(r));
  }
  return hosts;
}

ChurnSpec read_churn(Section& s, const Platform& p, uint64_t scenario_seed, size_t index, size_t* patterns) {
  ChurnSpec c;
  c.hosts = read_churn_hosts(s, p, patterns);
  c.mtbf_s = s.quantity("mtbf", Quantity::duration_s, std::nullopt, kChurnMeanRange);
  c.mttr_s = s.quantity("mttr", Quantity::duration_s, std::nullopt, kChurnMeanRange);
  c.start_s = read_time(s, "start", "0 s", kTimeRange);
  // The derived seed is recorded in resolved.yaml, so a resolved scenario replays the same churn.
  c.seed = s.unsigned_integer("seed", churn_seed(scenario_seed, index));
  s.finish();
  c.source = location(s);
  return c;
}

// Events on one (target, resource), in time order, must not overlap; they become one profile.
WorldProfile merge_events(std::vector<Event>& group, const Platform& p) {
  std::stable_sort(group.begin(), group.end(), [](const Event& a, const Event& b) { return a.at < b.at; });
  for (size_t i = 1; i < group.size(); ++i) {
    const Event& before = group[i - 1];
    if (before.until <= group[i].at) continue;
    group[i].section.fail("at", "this event (from " + seconds(group[i].at) + ") overlaps " +
                                    label(before.section, before.where) + ", which sets " + before.target.describe() +
                                    " from " + seconds(before.at) + " until " + seconds(before.until) +
                                    ": events on one target and resource may not overlap (without until, an event "
                                    "lasts to the end of the run)");
  }
  WorldProfile profile;
  profile.target = group[0].target.name;
  profile.what = group[0].target.what;
  for (size_t i = 0; i < group.size(); ++i) {
    const Event& e = group[i];
    profile.points.emplace_back(e.at, e.value);
    const bool next_starts_at_until = i + 1 < group.size() && group[i + 1].at == e.until;
    if (!std::isinf(e.until) && !next_starts_at_until) profile.points.emplace_back(e.until, nominal(e.target, p));
    profile.source += (i ? ", " : "") + e.where;
  }
  return profile;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

const char* resource_key(WorldResource what) {
  switch (what) {
    case WorldResource::host_speed: return "speed";
    case WorldResource::host_state: return "state";
    case WorldResource::link_bandwidth: return "bandwidth";
    case WorldResource::link_latency: return "latency";
    case WorldResource::link_state: return "state";
  }
  return "?";
}

uint64_t churn_seed(uint64_t scenario_seed, size_t index) {
  const uint64_t churn_stream = 0x636875726eULL;  // "churn": apart from other seeds derived from the scenario's
  return splitmix64(splitmix64(scenario_seed ^ churn_stream) + index) >> 1;
}

WorldSpec parse_world(Section& world, const PlatformSpec& platform, uint64_t scenario_seed) {
  const Platform p = index(platform);
  WorldSpec spec;
  spec.failure_timeout_s = world.quantity("failure_timeout", Quantity::duration_s, "10 s", kFailureTimeoutRange);

  // Who sets each (target, resource), for the message when a second source claims it.
  std::map<TargetKey, std::string> claimed_by;

  std::vector<Section> event_sections = world.list("events", "", /*optional=*/true);
  if (event_sections.size() > kMaxEvents) {
    world.fail("events", "has " + std::to_string(event_sections.size()) + " entries, more than " +
                             std::to_string(kMaxEvents));
  }
  std::vector<std::vector<Event>> groups;  // by (target, resource), in order of first appearance
  std::map<TargetKey, size_t> group_of;
  for (Section& s : event_sections) {
    Event e = read_event(s, p);
    const TargetKey key{e.target.name, e.target.what};
    auto [it, fresh] = group_of.emplace(key, groups.size());
    if (fresh) {
      groups.emplace_back();
      claimed_by.emplace(key, label(s, e.where));
    }
    groups[it->second].push_back(std::move(e));
  }
  for (auto& group : groups) spec.profiles.push_back(merge_events(group, p));

  std::vector<Section> trace_sections = world.list("traces", "", /*optional=*/true);
  if (trace_sections.size() > kMaxTraces) {
    world.fail("traces", "has " + std::to_string(trace_sections.size()) + " entries, more than " +
                             std::to_string(kMaxTraces));
  }
  size_t all_rows = 0;
  for (Section& s : trace_sections) {
    Trace tr = read_trace_entry(s, p, &all_rows);
    auto [it, fresh] = claimed_by.emplace(TargetKey{tr.target.name, tr.target.what}, label(s, tr.where));
    if (!fresh) {
      s.fail(tr.target.is_host() ? "host" : "link",
             tr.target.describe() + " is already set by " + it->second +
                 ": a target's resource takes its values from events or from one trace, not both");
    }
    spec.profiles.push_back(std::move(tr.profile));
  }

  size_t patterns = 0;
  std::vector<Section> churn_sections = world.list("churn", "", /*optional=*/true);
  for (size_t i = 0; i < churn_sections.size(); ++i) {
    Section& s = churn_sections[i];
    ChurnSpec c = read_churn(s, p, scenario_seed, i, &patterns);
    for (int rank : c.hosts) {
      const std::string& host = p.workers[static_cast<size_t>(rank)];
      auto [it, fresh] = claimed_by.emplace(TargetKey{host, WorldResource::host_state}, label(s, c.source));
      if (!fresh) {
        s.fail("hosts", "host " + host + " would churn, but its state is already set by " + it->second +
                            ": a host's state comes from one churn group, or from events or a trace, not both");
      }
    }
    spec.churn.push_back(std::move(c));
  }
  world.finish();
  return spec;
}

}  // namespace locosim
