// Where a run's model trains: runtime.device. `cpu` (the default) everywhere; `cuda` or `cuda:N` on a
// GPU, with a LibTorch built with CUDA (Debian's libtorch-dev is CPU-only: README, "Training on a GPU").
// On a GPU the model, its batches, its optimizers' state and the policies' own tensors live on the
// device; what crosses the network (the real backend's Gloo collectives, the parameter server's
// messages) is staged through host memory, as it is on the way to a WAN socket.
#pragma once
#include <torch/types.h>

#include <string>

namespace locosim {

struct Scenario;

// The device this process trains on. `cuda` is GPU local_rank modulo the GPUs visible (a rank per GPU
// on a node); `cuda:N` is GPU N. Throws ConfigError at runtime.device's line when this LibTorch cannot
// use that GPU (built without CUDA, no GPU visible, too few GPUs). On a GPU it also asks LibTorch for
// deterministic kernels, so that a scenario and seed give the same numbers run after run on that GPU
// (where LibTorch has no deterministic kernel for an op, it warns, naming the op).
torch::Device training_device(const Scenario& scenario, int local_rank = 0);

}  // namespace locosim
