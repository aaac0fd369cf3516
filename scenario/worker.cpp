// One path from a scenario to a training worker, for both backends (see worker.hpp).
#include "scenario/worker.hpp"

#include <torch/serialize/archive.h>
#include <torch/utils.h>

#include <cmath>
#include <sstream>

#include "algorithms/policies.hpp"
#include "scenario/scenario.hpp"

namespace locosim {
namespace {

// The factor on wire bytes after the scenario's `timing`: the target's parameters over the proxy's.
double wire_scale(const Scenario& s, const TinyLlamaImpl& model) {
  return s.timing.params ? *s.timing.params / static_cast<double>(model.num_params()) : 1.0;
}

// FLOPs charged per step, after `timing`.
double flops_per_step(const Scenario& s, const TinyLlamaImpl& model) {
  double tokens = s.timing.tokens_per_step.value_or(static_cast<double>(s.train.batch_size * s.model.seq_len));
  const double size_factor = wire_scale(s, model);
  // Muon's Newton-Schulz iterations cost per matrix, not per token: on a target model of the proxy's
  // shape scaled in width by k (params by k²), each matrix's n²m-like cost grows by k³ = size_factor^1.5
  // (docs/muon.md: an over-estimate by about sqrt(L_target/L_proxy) when the target is also deeper).
  const double optimizer_flops = optimizer_flops_per_step(model.parameters(), s.train.optimizer);
  return model.flops_per_token() * size_factor * tokens + optimizer_flops * std::pow(size_factor, 1.5);
}

}  // namespace

RunStart start_run(const Scenario& scenario) {
  torch::set_num_threads(scenario.threads);
  RunStart start{Corpus::from_file(scenario.data.path, scenario.data.eval_fraction, scenario.data.validation_fraction),
                 TinyLlama(nullptr)};
  torch::manual_seed(scenario.seed);
  start.initial = TinyLlama(scenario.model);
  start.step_flops = flops_per_step(scenario, *start.initial);
  start.wire_scale = wire_scale(scenario, *start.initial);
  return start;
}

Worker build_worker(const Scenario& scenario, const PolicySpec& spec, int rank, const RunStart& start,
                    TinyLlama model, std::vector<torch::Tensor> params, Transport& transport, Recorder& recorder) {
  Worker w;
  PolicyContext ctx{std::move(params), &transport, scenario.train.optimizer, scenario.train.steps, start.wire_scale};
  w.policy = make_policy(spec, std::move(ctx));
  Shard shard(start.corpus, rank, scenario.world_size(), scenario.data.split, static_cast<int>(scenario.model.seq_len),
              scenario.seed);
  w.loop = std::make_unique<TrainLoop>(std::move(model), std::move(shard), start.corpus, *w.policy, transport,
                                       scenario.train, start.step_flops, recorder);
  return w;
}

std::string saved_state(const Policy& policy) {
  torch::serialize::OutputArchive archive;
  policy.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void load_state(Policy& policy, const std::string& state, c10::optional<torch::Device> device) {
  std::istringstream in(state);
  torch::serialize::InputArchive archive;
  archive.load_from(in, device);
  policy.load(archive);
}

namespace {

double archive_tensor_bytes(torch::serialize::InputArchive& archive) {
  double bytes = 0;
  for (const std::string& key : archive.keys()) {
    torch::Tensor tensor;
    torch::serialize::InputArchive nested;
    if (archive.try_read(key, tensor)) {
      if (tensor.defined()) bytes += static_cast<double>(tensor.numel()) * static_cast<double>(tensor.element_size());
    } else if (archive.try_read(key, nested)) {
      bytes += archive_tensor_bytes(nested);
    }
  }
  return bytes;
}

}  // namespace

double state_tensor_bytes(const std::string& state) {
  std::istringstream in(state);
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  return archive_tensor_bytes(archive);
}

std::optional<double> final_validation_loss(const Scenario& scenario, const std::vector<double>& losses) {
  if (scenario.data.validation_fraction <= 0 || losses.empty()) return std::nullopt;
  double loss = 0;
  const double finished = static_cast<double>(losses.size());
  for (double l : losses) loss += l / finished;
  return loss;
}

}  // namespace locosim
