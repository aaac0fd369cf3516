// The archive helpers policies use to hand their state to a joining worker (policy.hpp).
#include "algorithms/policy.hpp"

#include <torch/serialize/archive.h>
#include <torch/utils.h>

namespace locosim {

void save_tensors(torch::serialize::OutputArchive& archive, const std::string& prefix,
                  const std::vector<torch::Tensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) archive.write(prefix + "." + std::to_string(i), tensors[i].detach());
}

void load_tensors(torch::serialize::InputArchive& archive, const std::string& prefix,
                  const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;  // scoped: no Transport call inside
  for (size_t i = 0; i < tensors.size(); ++i) {
    torch::Tensor value;
    archive.read(prefix + "." + std::to_string(i), value);
    tensors[i].detach().copy_(value);
  }
}

void save_optimizer(torch::serialize::OutputArchive& archive, const std::string& prefix,
                    const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive sub;
  optimizer.save(sub);
  archive.write(prefix, sub);
}

void load_optimizer(torch::serialize::InputArchive& archive, const std::string& prefix,
                    torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive sub;
  archive.read(prefix, sub);
  optimizer.load(sub);
}

}  // namespace locosim
