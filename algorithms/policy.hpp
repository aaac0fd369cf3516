// A policy is one training method (DDP, DiLoCo, ...): after each step's backward pass it updates
// the worker's parameters, communicating through the Transport as its paper says.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/optim.hpp"
#include "algorithms/sync.hpp"
#include "algorithms/transport.hpp"

namespace torch::serialize {
class OutputArchive;
class InputArchive;
}  // namespace torch::serialize

namespace locosim {


// What a policy gets to work with on one worker.
struct PolicyContext {
  std::vector<torch::Tensor> params;  // the worker's model parameters (updated in place)
  Transport* transport = nullptr;
  OptimizerConfig optimizer;          // the inner optimizer (train.optimizer)
  int64_t total_steps = 0;            // for the learning-rate schedule
  double wire_scale = 1.0;            // Wire::scale: prices the proxy model as the target model
};

class Policy {
 public:
  virtual ~Policy() = default;

  // Called after step `step`'s backward pass (0-based): the gradients are in params[i].grad().
  // The policy owns the update of the parameters and may zero or overwrite the gradients.
  virtual Sync step(int64_t step) = 0;
  // Runs `work`, the step's real forward and backward pass, once and charges `flops`, their compute,
  // in all: by default as one block before step(). A policy that overlaps its communication with the
  // backward pass (DDP's buckets) charges it in parts and starts collectives between them.
  virtual void compute_step(Transport& transport, double flops, const std::function<void()>& work) {
    transport.compute(flops, work);
  }

  // Called once after the last step, before the final evaluation: completes anything in flight.
  virtual void finish() {}

  // Most policies train every worker for train.steps steps. Those whose workers train different
  // numbers of steps (DiLoCo with timed rounds, asynchronous DiLoCo) end the run themselves: they
  // return true from ends_itself(), and the worker stops after the step at which done() turns true.
  virtual bool ends_itself() const { return false; }
  virtual bool done() const { return false; }

  // Handing the group's state to a worker that joins (or comes back) mid-run. A policy that can
  // returns true from handover_ready(): right after each of its syncs (committed or given up) it has
  // nothing in flight and holds the group's state. save() then writes everything a joiner needs
  // (parameters, optimizer and outer state) and the joiner's load() makes it a member in step with
  // the group. Policies whose collectives overlap their compute (Streaming DiLoCo, CO2 at delay 1)
  // never have such a point, and asynchronous DiLoCo does not hand over: a worker that leaves stays out.
  virtual bool handover_ready() const { return false; }
  virtual void save(torch::serialize::OutputArchive& /*archive*/) const {}
  virtual void load(torch::serialize::InputArchive& /*archive*/) {}
};

// save()/load() of a list of tensors under `prefix` (prefix.0, prefix.1, ...); load copies in place.
void save_tensors(torch::serialize::OutputArchive& archive, const std::string& prefix,
                  const std::vector<torch::Tensor>& tensors);
void load_tensors(torch::serialize::InputArchive& archive, const std::string& prefix,
                  const std::vector<torch::Tensor>& tensors);
// The same for an optimizer's whole state (torch's own serialization: lazily created state included).
void save_optimizer(torch::serialize::OutputArchive& archive, const std::string& prefix,
                    const torch::optim::Optimizer& optimizer);
void load_optimizer(torch::serialize::InputArchive& archive, const std::string& prefix,
                    torch::optim::Optimizer& optimizer);

}  // namespace locosim
