// A policy is one training method (DDP, DiLoCo, ...): after each step's backward pass it updates
// the worker's parameters, communicating through the Transport as its paper says.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "algorithms/optim.hpp"
#include "algorithms/transport.hpp"

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
  virtual void step(int64_t step) = 0;

  // Called once after the last step, before the final evaluation: completes anything in flight.
  virtual void finish() {}
};

}  // namespace locosim
