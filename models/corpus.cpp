// Corpus, shards and eval batches (see corpus.hpp).
#include "models/corpus.hpp"

#include <cmath>
#include <stdexcept>

#include "models/tokenizer.hpp"

namespace locosim {
namespace {

// (B, T+1) windows -> inputs (B, T) and next-token targets (B, T), both contiguous.
Batch split_windows(const torch::Tensor& windows_BW) {
  const int64_t T = windows_BW.size(1) - 1;
  return {windows_BW.narrow(1, 0, T).contiguous(), windows_BW.narrow(1, 1, T).contiguous()};
}

std::string shape_hint() { return "; use a longer corpus, fewer workers or a shorter seq_len"; }

}  // namespace

Corpus::Corpus(torch::Tensor train_N, torch::Tensor validation_N, torch::Tensor eval_N, int64_t size_bytes)
    : train_N_(std::move(train_N)),
      validation_N_(std::move(validation_N)),
      eval_N_(std::move(eval_N)),
      size_bytes_(size_bytes) {}

Corpus Corpus::from_text(const std::string& text, double eval_fraction, double validation_fraction) {
  if (text.empty()) throw std::invalid_argument("Corpus: the text is empty");
  if (!(eval_fraction >= 0.0 && validation_fraction >= 0.0 && eval_fraction + validation_fraction < 1.0)) {
    throw std::invalid_argument("Corpus: eval_fraction and validation_fraction must be >= 0 and together < 1, got " +
                                std::to_string(eval_fraction) + " and " + std::to_string(validation_fraction));
  }
  const auto tokens_N = encode_bytes(text);
  const int64_t n = tokens_N.size(0);
  const int64_t n_eval = std::llround(static_cast<double>(n) * eval_fraction);
  const int64_t n_validation = std::llround(static_cast<double>(n) * validation_fraction);
  const int64_t n_train = n - n_eval - n_validation;
  return Corpus(tokens_N.narrow(0, 0, n_train), tokens_N.narrow(0, n_train, n_validation),
                tokens_N.narrow(0, n - n_eval, n_eval), n);
}

Corpus Corpus::from_file(const std::string& path, double eval_fraction, double validation_fraction) {
  std::string text;
  if (const std::string problem = read_corpus_file(path, &text); !problem.empty()) {
    throw std::invalid_argument(path + ": " + problem);
  }
  return from_text(text, eval_fraction, validation_fraction);
}

Shard::Shard(const Corpus& corpus, int rank, int world_size, ShardMode mode, int seq_len,
             uint64_t seed)
    : train_N_(corpus.train()), mode_(mode), seq_len_(seq_len), rank_(rank), world_size_(world_size), seed_(seed) {
  if (world_size <= 0 || rank < 0 || rank >= world_size) {
    throw std::invalid_argument("Shard: rank " + std::to_string(rank) +
                                " is not in [0, world_size = " + std::to_string(world_size) + ")");
  }
  if (seq_len <= 0) throw std::invalid_argument("Shard: seq_len must be > 0, got " + std::to_string(seq_len));
  const int64_t n = train_N_.size(0), window = seq_len_ + 1, K = world_size;
  if (mode == ShardMode::iid) {
    const int64_t n_blocks = n / window;  // the ragged tail (< one block) is dropped
    num_tokens_ = (rank < n_blocks ? (n_blocks - rank + K - 1) / K : 0) * window;  // blocks rank, rank + K, ...
  } else {
    num_tokens_ = n * (rank + 1) / K - n * rank / K;
  }
  if (num_tokens_ < window) {
    throw std::invalid_argument(
        "Shard: worker " + std::to_string(rank) + " of " + std::to_string(world_size) + " gets " +
        std::to_string(num_tokens_) + " of the " + std::to_string(n) + " train tokens (" +
        (mode == ShardMode::iid ? "iid" : "non_iid") + "), fewer than seq_len+1 = " +
        std::to_string(window) + shape_hint());
  }
}

void Shard::cut() {
  const int64_t n = train_N_.size(0), window = seq_len_ + 1, K = world_size_;
  if (mode_ == ShardMode::iid) {
    const int64_t n_blocks = n / window;
    auto blocks_NW = train_N_.narrow(0, 0, n_blocks * window).view({n_blocks, window});
    slice_N_ = blocks_NW.slice(0, rank_, n_blocks, K).reshape({-1});
  } else {
    const int64_t begin = n * rank_ / K;
    slice_N_ = train_N_.narrow(0, begin, num_tokens_);
  }
  train_N_ = torch::Tensor();
  // seed_seq and mt19937_64 are fully specified by the standard, so batches match across platforms.
  std::seed_seq seq{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32), static_cast<uint32_t>(rank_)};
  rng_.emplace(seq);
}

Batch Shard::next(int batch_size) {
  if (batch_size <= 0) throw std::invalid_argument("Shard::next: batch_size must be > 0");
  if (!rng_) cut();
  const int64_t window = seq_len_ + 1;
  // Plain modulo instead of std::uniform_int_distribution, whose output is implementation-defined;
  // the bias is below n / 2^64.
  const uint64_t n_starts = mode_ == ShardMode::iid ? slice_N_.size(0) / window
                                                    : slice_N_.size(0) - window + 1;
  auto starts_B = torch::empty({batch_size}, torch::kInt64);
  auto* starts = starts_B.data_ptr<int64_t>();
  for (int b = 0; b < batch_size; ++b) {
    const auto pick = static_cast<int64_t>((*rng_)() % n_starts);
    starts[b] = mode_ == ShardMode::iid ? pick * window : pick;
  }
  const auto index_BW = starts_B.unsqueeze(1) + torch::arange(window, torch::kInt64).unsqueeze(0);
  const auto windows_BW = slice_N_.index_select(0, index_BW.reshape({-1})).view({batch_size, window});
  return split_windows(windows_BW);
}

Batch eval_batch(const Corpus& corpus, int batch_index, int batch_size, int seq_len, Split split) {
  if (batch_index < 0 || batch_size <= 0 || seq_len <= 0) {
    throw std::invalid_argument("eval_batch: batch_index must be >= 0 and batch_size, seq_len > 0");
  }
  const auto& eval_N = corpus.held_out(split);
  const int64_t window = seq_len + 1, n_windows = eval_N.size(0) / window;
  if (n_windows == 0) {
    const char* name = split == Split::test ? "eval" : "validation";
    throw std::invalid_argument(std::string("eval_batch: the ") + name + " split has " +
                                std::to_string(eval_N.size(0)) + " tokens, fewer than seq_len+1 = " +
                                std::to_string(window) + "; raise " + name +
                                "_fraction, use a longer corpus or a shorter seq_len");
  }
  const auto first = static_cast<int64_t>(batch_index) * batch_size;
  const auto window_B = torch::remainder(torch::arange(first, first + batch_size, torch::kInt64), n_windows);
  const auto index_BW = window_B.unsqueeze(1) * window + torch::arange(window, torch::kInt64).unsqueeze(0);
  const auto windows_BW = eval_N.index_select(0, index_BW.reshape({-1})).view({batch_size, window});
  return split_windows(windows_BW);
}

}  // namespace locosim
