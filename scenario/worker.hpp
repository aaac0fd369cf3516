// One path from a scenario to a training worker, for both backends (sim/simulate.cpp and
// real/rank.cpp), so that they cannot drift: the same threads, corpus, seed and initial weights, the
// same policy, shard and training loop for a rank, and the same final validation loss.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/policy.hpp"
#include "algorithms/train_loop.hpp"
#include "models/corpus.hpp"
#include "models/llama.hpp"

namespace locosim {

struct Scenario;
struct PolicySpec;
class Recorder;
class Transport;

// What every worker of a run starts from: LibTorch's thread count set to runtime.threads, the corpus
// read, and the group's initial weights drawn from the scenario's seed (on the CPU: the same weights
// on every worker, rank and backend, wherever they train afterwards).
struct RunStart {
  Corpus corpus;
  TinyLlama initial;
  double step_flops = 0;  // one forward+backward+optimizer step of the target model (timing:)
  double wire_scale = 1;  // Wire::scale: the proxy's bytes priced as the target model's
};
RunStart start_run(const Scenario& scenario);

// One worker: its policy over `params` (the model's parameters, or meta tensors of their shapes in a
// timing-only run), its data shard for `rank`, and its training loop over `model`.
struct Worker {
  std::unique_ptr<Policy> policy;
  std::unique_ptr<TrainLoop> loop;
};
Worker build_worker(const Scenario& scenario, const PolicySpec& spec, int rank, const RunStart& start,
                    TinyLlama model, std::vector<torch::Tensor> params, Transport& transport, Recorder& recorder);

// A policy's state as bytes (a LibTorch archive: Policy::save), as it is handed over to a returning
// worker, and its load into the joiner's policy, its tensors onto `device` (none: where they were saved).
std::string saved_state(const Policy& policy);
void load_state(Policy& policy, const std::string& state, c10::optional<torch::Device> device = c10::nullopt);

// What a handover weighs on the wire before Wire::scale: the tensor data in a saved state, nested
// archives (an optimizer's state) included, from shapes and types only (a timing-only run's meta
// tensors weigh what the full run's do). The archive's own metadata (names, shapes) is left out: it
// would not scale with the target model.
double state_tensor_bytes(const std::string& state);

// The run's final validation loss: the mean over the finished workers' losses on the validation
// split (`losses`, in rank order, summed in that order); none when the scenario has no validation
// split or no worker finished.
std::optional<double> final_validation_loss(const Scenario& scenario, const std::vector<double>& losses);

}  // namespace locosim
