// DiLoCo with its all-reduce overlapped with the next round's inner steps (Kale, Douillard, Donchev
// 2025, "Eager Updates For Overlapped Communication and Computation in DiLoCo", arXiv 2502.12996):
// the outer step of round t uses the average of round t − 1, which travelled during round t; `eager`
// replaces the worker's own stale share of it by its fresh one, `delayed` is the naive variant the
// paper compares with. Outer optimizer and defaults are DiLoCo's.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>

#include "algorithms/outer_config.hpp"
#include "algorithms/policy_registry.hpp"
#include "algorithms/train_config.hpp"
#include "algorithms/wire_format.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;

enum class EagerVariant { eager, delayed };

struct EagerDiLoCoConfig {
  int64_t inner_steps = 500;   // H (DiLoCo's)
  EagerVariant variant = EagerVariant::eager;
  OuterConfig outer;           // DiLoCo's: Nesterov, η 0.7, μ 0.9 (the same keys)
  WireFormat wire = WireFormat::fp32;

  static EagerDiLoCoConfig parse(Section& s);
};

std::unique_ptr<Policy> make_eager_diloco(const EagerDiLoCoConfig& cfg, PolicyContext ctx);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline EagerDiLoCoConfig EagerDiLoCoConfig::parse(Section& s) {
  EagerDiLoCoConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  c.variant = s.choice("variant", {"eager", "delayed"}, "eager") == "delayed" ? EagerVariant::delayed : EagerVariant::eager;
  c.outer = OuterConfig::parse(s, c.outer);
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry eager_diloco_policy() {
  return policy_entry<EagerDiLoCoConfig>({
      .name = "eager_diloco",
      .paper = "arXiv 2502.12996",
      .sync_period = [](const EagerDiLoCoConfig& c) -> std::optional<SyncPeriod> { return SyncPeriod{"inner_steps", c.inner_steps}; },
      .reads_clock = [](const EagerDiLoCoConfig&) { return false; },
      .collective = [](const EagerDiLoCoConfig&) { return RoundCollective::all_reduce; },
      .handover = "none: a round's all-reduce is always in flight, so a lost worker stays out",
      .on_failed_collective = "the failed round's average is skipped, not redone (eager steps on its own fresh share)",
      .bytes_per_round = "2(K−1)/K · P · b every H steps, overlapped with the next H steps",
      .example = "{name: eager_diloco, inner_steps: 3}",
  });
}

}  // namespace locosim
