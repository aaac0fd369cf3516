// Asynchronous DiLoCo (Liu et al. 2024, "Asynchronous Local-SGD Training for Language Modeling",
// arXiv 2401.09135): a server holds the global model and the outer optimizer; each worker pushes its
// pseudo-gradient when its H steps are done and continues from the model the server sends back,
// never waiting for the others. Delayed Nesterov and Dynamic Local Updates are switchable.
#pragma once
#include <memory>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

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

// Its registry entry (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry async_diloco_policy();

// The group's server, starting from θ = theta; the run ends once pushes hold workers × total_steps
// inner steps. A push is the pseudo-gradient's tensors then [steps, mean step seconds] (float64); a
// reply is θ's tensors then [version, H_i, done].
std::unique_ptr<ParameterServer> make_async_server(const AsyncDiLoCoConfig& cfg, const std::vector<torch::Tensor>& theta,
                                                   int workers, int64_t total_steps);

}  // namespace locosim
