// The reduction shared by every Transport (see transport.hpp).
#include "algorithms/transport.hpp"

#include <torch/utils.h>

namespace locosim {

std::vector<torch::Tensor> mean_in_rank_order(const std::vector<std::vector<torch::Tensor>>& contributions,
                                              WireFormat format) {
  torch::NoGradGuard no_grad;  // scoped: never held across a simulator context switch
  const size_t world = contributions.size();
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i < contributions[0].size(); ++i) {
    torch::Tensor sum = contributions[0][i].to(torch::kFloat32, false, /*copy=*/true);
    for (size_t r = 1; r < world; ++r) sum.add_(contributions[r][i]);
    sum.div_(static_cast<double>(world));
    out.push_back(through_wire(sum, format).to(contributions[0][i].scalar_type()));
  }
  return out;
}

std::vector<std::vector<torch::Tensor>> gathered_copy(const std::vector<std::vector<torch::Tensor>>& contributions) {
  std::vector<std::vector<torch::Tensor>> out(contributions.size());
  for (size_t r = 0; r < contributions.size(); ++r) {
    for (const auto& x : contributions[r]) out[r].push_back(x.clone());
  }
  return out;
}

double wire_bytes(const std::vector<torch::Tensor>& xs, WireFormat format) {
  double total = 0;
  for (const auto& x : xs) total += wire_bytes(format, x.numel());
  return total;
}

}  // namespace locosim
