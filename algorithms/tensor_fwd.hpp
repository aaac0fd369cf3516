// LibTorch's tensor, declared without LibTorch's headers (as LibTorch's own headers declare it), for a
// header that only names it: a policy's header, which the scenario loader includes without LibTorch.
// Whoever makes or uses a tensor includes <torch/types.h>.
#pragma once

namespace at {
class Tensor;
}  // namespace at
namespace torch {
using at::Tensor;
}  // namespace torch
