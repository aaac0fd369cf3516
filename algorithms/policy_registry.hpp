// The registry of policies: one entry per policy, declared in the policy's own header (`<name>_policy()`,
// next to its Config) and listed once in policy_list.hpp. An entry names the policy, parses its config
// and states its traits; every list of policies (the scenario's `name:` choices, the cross-policy
// tests, the docs) is read from here. Nothing here needs LibTorch: the scenario loader (and its fuzzer)
// reads every policy's keys without it. Building a policy is make_policy's (policies.hpp), from the
// same list: `make_<name>` in the policy's .cpp.
//
// A policy declares its entry with policy_entry<Config>({.name = ..., ...}): each field of PolicyTraits
// is Required, so an entry that leaves one out does not compile ("use of deleted function
// 'locosim::Required<...>::Required()'").
#pragma once
#include <any>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace locosim {

class Section;

// A value that must be given: no default constructor, so an aggregate that omits it does not compile.
template <class T>
struct Required {
  template <class U, class = std::enable_if_t<std::is_constructible_v<T, U&&>>>
  Required(U&& v) : value(std::forward<U>(v)) {}  // NOLINT: implicit, for designated initializers
  Required() = delete;
  T value;
};

// The policy's key for its synchronization period and its value, in steps (diloco's {"inner_steps", 500}).
struct SyncPeriod {
  std::string key;
  int64_t steps = 0;
};

// The collective a policy's rounds use (what `locosim check --explain` prices with the scenario's
// network algorithms).
enum class RoundCollective {
  all_reduce,           // every worker, all_reduce_mean
  all_gather,           // every worker, all_gather (sparse or trimmed payloads)
  subgroup_all_reduce,  // all_reduce_mean_among a group the policy draws
  server,               // pushes to a parameter server and its replies
};

// What a policy states about itself, typed by its config.
template <class Config>
struct PolicyTraits {
  Required<std::string> name;     // the scenario's `name:` ("diloco"): an identifier
  Required<std::string> paper;    // the method's source, as the docs cite it ("arXiv 2311.08105")
  // Its synchronization period; std::nullopt for a policy that communicates every step (ddp, demo).
  Required<std::function<std::optional<SyncPeriod>(const Config&)>> sync_period;
  // Whether what it trains (values, order) depends on the clock: then a sweep never re-times its runs
  // from another point's (cli/run.hpp), and its timing-only runs are not compared with full ones.
  Required<std::function<bool(const Config&)>> reads_clock;
  // The collective its rounds use.
  Required<std::function<RoundCollective(const Config&)>> collective;
  // For the docs: what a returning worker gets, its rule when a collective fails, the bytes a worker
  // sends per round (P parameters, b bytes per value, K workers, H inner steps).
  Required<std::string> handover;
  Required<std::string> on_failed_collective;
  Required<std::string> bytes_per_round;
  // A small entry (YAML flow) that communicates within 12 steps of a tiny run: what the cross-policy
  // tests (timing-only, faults, commit, determinism, real-backend parity) run of this policy.
  Required<std::string> example;
};

// A registered policy with its config erased (std::any holding the policy's Config).
struct PolicyEntry {
  std::string name, paper, handover, on_failed_collective, bytes_per_round, example;
  std::function<std::any(Section&)> parse;  // Config::parse: its keys, with their defaults
  std::function<std::optional<SyncPeriod>(const std::any&)> sync_period;
  std::function<bool(const std::any&)> reads_clock;
  std::function<RoundCollective(const std::any&)> collective;
};

template <class Config>
PolicyEntry policy_entry(PolicyTraits<Config> t) {
  PolicyEntry e{std::move(t.name.value), std::move(t.paper.value), std::move(t.handover.value),
                std::move(t.on_failed_collective.value), std::move(t.bytes_per_round.value),
                std::move(t.example.value), {}, {}, {}, {}};
  e.parse = [](Section& s) { return std::any(Config::parse(s)); };
  e.sync_period = [f = std::move(t.sync_period.value)](const std::any& c) { return f(std::any_cast<const Config&>(c)); };
  e.reads_clock = [f = std::move(t.reads_clock.value)](const std::any& c) { return f(std::any_cast<const Config&>(c)); };
  e.collective = [f = std::move(t.collective.value)](const std::any& c) { return f(std::any_cast<const Config&>(c)); };
  return e;
}

// Every registered policy, in the order of policy_list.hpp.
const std::vector<PolicyEntry>& policy_registry();

// The entry named `name`; nullptr if none.
const PolicyEntry* find_policy(const std::string& name);

// Every registered policy's traits as a Markdown table (name, source, bytes per round, rule on a failed
// collective, handover): what `locosim policies` prints.
std::string policy_table();

}  // namespace locosim
