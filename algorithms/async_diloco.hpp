// Asynchronous DiLoCo (Liu et al. 2024, "Asynchronous Local-SGD Training for Language Modeling",
// arXiv 2401.09135): a server holds the global model and the outer optimizer; each worker pushes its
// pseudo-gradient when its H steps are done and continues from the model the server sends back,
// never waiting for the others. Delayed Nesterov and Dynamic Local Updates are switchable.
#pragma once
#include <memory>
#include <optional>

#include "algorithms/policy_registry.hpp"
#include "algorithms/tensor_fwd.hpp"
#include "algorithms/train_config.hpp"
#include "algorithms/wire_format.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;
class ParameterServer;

// The server's outer optimizer. `nesterov`: a Nesterov step on every push (the paper's "Async
// DiLoCo" baseline). `delayed_nesterov`: the momentum moves once every N pushes, on their mean; in
// between each push is applied as a plain step (Alg. 3, DN).
enum class AsyncOuter { nesterov, delayed_nesterov };

struct AsyncDiLoCoConfig {
  int64_t inner_steps = 50;             // H: the fastest worker's inner steps per push (the paper's 50)
  double outer_lr = 0.7;                // ε (DiLoCo's)
  double outer_momentum = 0.9;          // β
  AsyncOuter outer = AsyncOuter::delayed_nesterov;
  int64_t delay = 0;                    // N, pushes per momentum step; 0: the number of workers
  double momentum_activation = 0;       // c in [0, 1/N]: the share of β·m applied at every push (paper: 0)
  bool dylu = true;                     // Dynamic Local Updates: H_i = ⌊H · v_i / max_j v_j⌋
  double grace_s = 0;                   // the server's grace period
  WireFormat wire = WireFormat::fp32;   // the pseudo-gradient on the wire (the model comes back in fp32)

  static AsyncDiLoCoConfig parse(Section& s);
};

std::unique_ptr<Policy> make_async_diloco(const AsyncDiLoCoConfig& cfg, PolicyContext ctx);

// The group's server, starting from θ = theta; the run ends once pushes hold workers × total_steps
// inner steps. A push is the pseudo-gradient's tensors then [steps, mean step seconds] (float64); a
// reply is θ's tensors then [version, H_i, done].
std::unique_ptr<ParameterServer> make_async_server(const AsyncDiLoCoConfig& cfg, const std::vector<torch::Tensor>& theta,
                                                   int workers, int64_t total_steps);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline AsyncDiLoCoConfig AsyncDiLoCoConfig::parse(Section& s) {
  AsyncDiLoCoConfig c;
  c.inner_steps = s.integer("inner_steps", c.inner_steps, Range::closed(1, kMaxSteps));
  c.outer_lr = s.number("outer_lr", c.outer_lr, Range::open_closed(0, kMaxOuterLr));
  c.outer_momentum = s.number("outer_momentum", c.outer_momentum, Range::closed_open(0, 1));
  c.outer = s.choice("outer", {"delayed_nesterov", "nesterov"}, "delayed_nesterov") == "nesterov"
                ? AsyncOuter::nesterov
                : AsyncOuter::delayed_nesterov;
  if (c.outer == AsyncOuter::delayed_nesterov) {
    c.delay = s.integer("delay", c.delay, Range::closed(0, 1 << 20));
    // c ≤ 1/N is checked by the scenario, which knows N when it is the number of workers.
    c.momentum_activation = s.number("momentum_activation", c.momentum_activation, Range::closed(0, 1));
  }
  c.dylu = s.flag("dylu", c.dylu);
  c.grace_s = s.number("grace_s", c.grace_s, Range::closed(0, 3.2e7));
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry async_diloco_policy() {
  return policy_entry<AsyncDiLoCoConfig>({
      .name = "async_diloco",
      .paper = "arXiv 2401.09135",
      // The fastest worker's steps per push.
      .sync_period = [](const AsyncDiLoCoConfig& c) -> std::optional<SyncPeriod> {
        return SyncPeriod{"inner_steps", c.inner_steps};
      },
      // Pushes are applied as they arrive.
      .reads_clock = [](const AsyncDiLoCoConfig&) { return true; },
      .collective = [](const AsyncDiLoCoConfig&) { return RoundCollective::server; },
      .handover = "none yet: a lost worker stays out",
      .on_failed_collective = "a failed push is not applied; the worker goes on from the model it last received",
      .bytes_per_round = "P · b up and P · 4 down per push, through the server",
      // A grace period longer than the run: each window holds both ranks' pushes, applied in rank order,
      // so the update order does not depend on which push lands first.
      .example = "{name: async_diloco, inner_steps: 4, dylu: false, grace_s: 1000}",
  });
}

}  // namespace locosim
