// runtime.device (see device.hpp).
#include "scenario/device.hpp"

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cstdlib>

#include "scenario/scenario.hpp"

namespace locosim {

torch::Device training_device(const Scenario& scenario, int local_rank) {
  if (scenario.device == "cpu") return torch::kCPU;
  const auto fail = [&](const std::string& message) {
    const ConfigError& at = *scenario.device_at;
    throw ConfigError(at.file(), at.line(), at.column(), at.key(), message);
  };
  const int visible = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  if (visible == 0) {
    fail(scenario.device + ": this LibTorch (" TORCH_VERSION ") can use no GPU: it was built without CUDA "
         "(Debian's libtorch-dev is CPU-only) or no GPU is visible (driver, CUDA_VISIBLE_DEVICES). Build locosim "
         "against a LibTorch with CUDA: cmake -S . -B build -DTorch_DIR=<libtorch>/share/cmake/Torch "
         "(README, \"Training on a GPU\"), or set runtime.device: cpu");
  }
  int index = cuda_device_index(scenario.device);
  if (index < 0) index = local_rank % visible;
  if (index >= visible) {
    fail(scenario.device + ": this machine shows " + std::to_string(visible) + " GPU" + (visible == 1 ? "" : "s") +
         " (indices 0 to " + std::to_string(visible - 1) + ")");
  }
  // cuBLAS is deterministic only with a fixed workspace; LibTorch reads this when cuBLAS starts.
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  // Deterministic kernels where LibTorch has them; an op without one warns (naming itself) instead of
  // failing the run: DeMo's scatter_add_ has none on CUDA, though its sums are exact in any order.
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  return {torch::kCUDA, static_cast<torch::DeviceIndex>(index)};
}

}  // namespace locosim
