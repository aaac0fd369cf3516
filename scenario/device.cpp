// runtime.device (see device.hpp).
#include "scenario/device.hpp"

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cstdlib>

#include "scenario/scenario.hpp"

namespace locosim {

namespace {

constexpr int kMaxDeviceIndex = 63;

// The N of "cuda:N"; -1 for "cuda".
int cuda_index(const std::string& name) { return name == "cuda" ? -1 : std::stoi(name.substr(5)); }

}  // namespace

bool valid_device_name(const std::string& name) {
  if (name == "cpu" || name == "cuda") return true;
  if (name.rfind("cuda:", 0) != 0 || name.size() < 6 || name.size() > 7) return false;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  if (name.size() == 7 && name[5] == '0') return false;  // "cuda:07"
  return cuda_index(name) <= kMaxDeviceIndex;
}

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
  int index = cuda_index(scenario.device);
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
