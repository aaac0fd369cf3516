// DiLoCo with its all-reduce overlapped with the next round's inner steps (Kale, Douillard, Donchev
// 2025, "Eager Updates For Overlapped Communication and Computation in DiLoCo", arXiv 2502.12996):
// the outer step of round t uses the average of round t − 1, which travelled during round t; `eager`
// replaces the worker's own stale share of it by its fresh one, `delayed` is the naive variant the
// paper compares with. Outer optimizer and defaults are DiLoCo's.
#pragma once
#include <cstdint>
#include <memory>

#include "algorithms/local_sgd.hpp"
#include "algorithms/policy.hpp"

namespace locosim {

class Section;

enum class EagerVariant { eager, delayed };

struct EagerDiLoCoConfig {
  int64_t inner_steps = 500;   // H (DiLoCo's)
  EagerVariant variant = EagerVariant::eager;
  OuterConfig outer;           // DiLoCo's: Nesterov, η 0.7, μ 0.9 (the same keys)
  WireFormat wire = WireFormat::fp32;

  static EagerDiLoCoConfig parse(Section& s);
};

std::unique_ptr<Policy> make_eager_diloco(const EagerDiLoCoConfig& cfg, PolicyContext ctx);

// Its registry entry (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry eager_diloco_policy();

}  // namespace locosim
