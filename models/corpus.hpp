// Training text as byte tokens: a train/eval split, one shard of the train split per worker, and the
// fixed eval batches every worker and policy is scored on. Deterministic: no libtorch global RNG.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "models/corpus_config.hpp"

namespace locosim {

struct Batch {
  torch::Tensor x_BT;  // int64 (B, T): input tokens
  torch::Tensor y_BT;  // int64 (B, T): next tokens, y[b][t] == x[b][t+1] of the same window
};

// The held-out parts of a corpus: `test` (the eval split every table reports) and `validation` (what
// tuning chooses on, never reported as the result).
enum class Split { test, validation };

// A text as byte tokens, split deterministically into train (the head), validation (next) and eval,
// the test split (the tail): [ train | validation | eval ].
class Corpus {
 public:
  // eval_fraction, validation_fraction: shares of the tokens (rounded) that go to those splits, each
  // >= 0, together < 1. Without validation the train and eval splits are as they always were.
  // Throws std::invalid_argument if the text is empty or a fraction is out of range.
  static Corpus from_text(const std::string& text, double eval_fraction, double validation_fraction = 0);
  // Throws std::invalid_argument("<path>: <why>") if the file is unreadable, empty or not UTF-8.
  static Corpus from_file(const std::string& path, double eval_fraction, double validation_fraction = 0);

  const torch::Tensor& train() const { return train_N_; }            // int64 1-D
  const torch::Tensor& eval() const { return eval_N_; }              // int64 1-D: the test split
  const torch::Tensor& validation() const { return validation_N_; }  // int64 1-D; empty without one
  const torch::Tensor& held_out(Split split) const { return split == Split::test ? eval_N_ : validation_N_; }
  int64_t size_bytes() const { return size_bytes_; }

 private:
  Corpus(torch::Tensor train_N, torch::Tensor validation_N, torch::Tensor eval_N, int64_t size_bytes);
  torch::Tensor train_N_;
  torch::Tensor validation_N_;
  torch::Tensor eval_N_;
  int64_t size_bytes_;
};

// One worker's slice of the train split; draws batches from its own RNG, so the sequence of batches
// depends only on the constructor's arguments (bit-identical across runs and platforms). The slice
// and the RNG are made at the first batch: a worker that never draws one (a timing-only run's) costs
// its size check alone.
class Shard {
 public:
  // REQUIRES: 0 <= rank < world_size. Throws std::invalid_argument if the slice is shorter than
  // seq_len+1 tokens (no window fits).
  Shard(const Corpus& corpus, int rank, int world_size, ShardMode mode, int seq_len, uint64_t seed);

  // batch_size windows of seq_len+1 tokens at random start offsets inside this worker's slice
  // (iid: each window is one of the worker's blocks; non_iid: any offset in its range).
  Batch next(int batch_size);
  int64_t num_tokens() const { return num_tokens_; }

 private:
  void cut();  // the slice and the RNG, before the first batch

  torch::Tensor train_N_;  // the corpus's train split (shared, not copied), until cut()
  torch::Tensor slice_N_;  // this worker's tokens; iid: its blocks back to back
  ShardMode mode_;
  int64_t seq_len_;
  int rank_, world_size_;
  uint64_t seed_;
  int64_t num_tokens_;
  std::optional<std::mt19937_64> rng_;
};

// Batch number `batch_index` of a held-out split (the eval split unless told): the split is cut into
// non-overlapping windows of seq_len+1 tokens and batch i takes windows i*B .. i*B+B-1 (wrapping
// around). The same for every worker and policy. Throws std::invalid_argument if the split is shorter
// than seq_len+1.
Batch eval_batch(const Corpus& corpus, int batch_index, int batch_size, int seq_len, Split split = Split::test);

}  // namespace locosim
