// Tests for Corpus, corpus_file_problem, Shard and eval_batch.
#include "models/corpus.hpp"

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <stdexcept>

#include <sys/stat.h>
#include <unistd.h>

#include "models/tokenizer.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
namespace fs = std::filesystem;

namespace {

// Random lowercase text: any 9-byte window of it almost surely occurs once, so a window's origin
// can be found by searching for it.
std::string random_text(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::string text(n, ' ');
  for (auto& c : text) c = static_cast<char>('a' + gen() % 26);
  return text;
}

// Every offset p of `tokens_N` where tokens[p : p+len(window)] == window.
std::vector<int64_t> offsets_of(const torch::Tensor& tokens_N, const torch::Tensor& window_W) {
  const int64_t W = window_W.size(0);
  const auto all_PW = tokens_N.unfold(0, W, 1);  // (n-W+1, W)
  const auto hits_P = all_PW.eq(window_W.unsqueeze(0)).all(1).nonzero().flatten();
  return std::vector<int64_t>(hits_P.data_ptr<int64_t>(), hits_P.data_ptr<int64_t>() + hits_P.numel());
}

// The train offset of every window of a batch (x plus the last target), checked to be unique.
std::vector<int64_t> window_offsets(const Corpus& corpus, const Batch& batch) {
  std::vector<int64_t> offsets;
  for (int64_t b = 0; b < batch.x_BT.size(0); ++b) {
    const auto window_W = torch::cat({batch.x_BT[b], batch.y_BT[b].narrow(0, batch.y_BT.size(1) - 1, 1)});
    const auto hits = offsets_of(corpus.train(), window_W);
    REQUIRE(hits.size() == 1);
    offsets.push_back(hits[0]);
  }
  return offsets;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("locosim_models_test_" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path / name, std::ios::binary) << bytes;
    return (path / name).string();
  }
};

}  // namespace

TEST_CASE("models/Corpus: train is the head, eval the tail, sizes follow eval_fraction") {
  const std::string text = random_text(1000, 1);
  const auto corpus = Corpus::from_text(text, 0.1);
  CHECK(corpus.size_bytes() == 1000);
  CHECK(corpus.train().size(0) == 900);
  CHECK(corpus.eval().size(0) == 100);
  CHECK(decode_bytes(corpus.train()) == text.substr(0, 900));
  CHECK(decode_bytes(corpus.eval()) == text.substr(900));
  CHECK(Corpus::from_text(text, 0.0).eval().size(0) == 0);
  CHECK(torch::equal(Corpus::from_text(text, 0.1).train(), corpus.train()));
  CHECK(torch::equal(Corpus::from_text(text, 0.1).eval(), corpus.eval()));
  CHECK_THROWS_AS(Corpus::from_text(text, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(Corpus::from_text(text, -0.1), std::invalid_argument);
  CHECK_THROWS_AS(Corpus::from_text("", 0.1), std::invalid_argument);
}

TEST_CASE("models/Corpus: a validation split sits between train and eval, which stays the tail") {
  const std::string text = random_text(1000, 2);
  const auto corpus = Corpus::from_text(text, 0.1, 0.05);
  CHECK(corpus.train().size(0) == 850);
  CHECK(decode_bytes(corpus.train()) == text.substr(0, 850));
  CHECK(decode_bytes(corpus.validation()) == text.substr(850, 50));
  CHECK(decode_bytes(corpus.eval()) == text.substr(900));  // the test split is the same as without one
  CHECK(torch::equal(corpus.held_out(Split::test), corpus.eval()));
  CHECK(torch::equal(corpus.held_out(Split::validation), corpus.validation()));
  CHECK(Corpus::from_text(text, 0.1).validation().size(0) == 0);
  CHECK_THROWS_AS(Corpus::from_text(text, 0.6, 0.4), std::invalid_argument);
  CHECK_THROWS_AS(Corpus::from_text(text, 0.1, -0.1), std::invalid_argument);
  // Validation batches come from the validation split only.
  const Batch b = eval_batch(corpus, 0, 2, 8, Split::validation);
  CHECK(decode_bytes(b.x_BT[0]) == text.substr(850, 8));
  CHECK(decode_bytes(b.x_BT[1]) == text.substr(859, 8));
  CHECK(decode_bytes(eval_batch(corpus, 0, 1, 8).x_BT[0]) == text.substr(900, 8));
}

TEST_CASE("models/corpus_file_problem: missing, empty, invalid UTF-8 and good files") {
  const TempDir dir;
  CHECK(corpus_file_problem((dir.path / "missing.txt").string()) == "does not exist");
  CHECK(corpus_file_problem(dir.write("empty.txt", "")) == "is empty");
  CHECK(corpus_file_problem(dir.write("bad.txt", "ab\xFF" "cd")) ==
        "is not valid UTF-8 (first bad byte at offset 2)");
  CHECK(corpus_file_problem(dir.write("overlong.txt", "x\xC0\x80")) ==
        "is not valid UTF-8 (first bad byte at offset 1)");
  CHECK(corpus_file_problem(dir.write("surrogate.txt", "\xED\xA0\x80")) ==
        "is not valid UTF-8 (first bad byte at offset 0)");
  CHECK(corpus_file_problem(dir.write("truncated.txt", "abc\xE6\x9D")) ==
        "is not valid UTF-8 (first bad byte at offset 3)");
  CHECK(corpus_file_problem(dir.path.string()) != "");
  const std::string good = dir.write("good.txt", "héllo 東京 🚀\n");
  CHECK(corpus_file_problem(good) == "");
  CHECK(Corpus::from_file(good, 0.0).size_bytes() == 19);  // 1+2+3+1+6+1+4+1 bytes
}

TEST_CASE("models/corpus_file_problem: a FIFO, a device or a file over 1 GiB is refused without being read") {
  const TempDir dir;
  const std::string fifo = (dir.path / "pipe").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // opening it would block until a writer comes
  CHECK(corpus_file_problem(fifo).find("is not a regular file") == 0);
  CHECK(corpus_file_problem("/dev/zero").find("is not a regular file") == 0);  // would be read for ever
  const std::string big = dir.write("big.txt", "a");
  fs::resize_file(big, kMaxCorpusBytes + 1);  // sparse: nothing is written, and nothing may be read
  CHECK(corpus_file_problem(big).find("is 1073741825 bytes, more than the 1 GiB a corpus may have") == 0);
  CHECK_THROWS_WITH(Corpus::from_file(fifo, 0.1), doctest::Contains("is not a regular file"));
}

TEST_CASE("models/Corpus::from_file: the error names the file and the reason") {
  const TempDir dir;
  const std::string bad = dir.write("bad.txt", "ok\x80");
  try {
    Corpus::from_file(bad, 0.1);
    FAIL("expected std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == bad + ": is not valid UTF-8 (first bad byte at offset 2)");
  }
}

TEST_CASE("models/Shard: iid workers draw whole blocks r, r+K, ... and nothing else") {
  const auto corpus = Corpus::from_text(random_text(4000, 2), 0.1);
  const int K = 4, T = 8, W = T + 1;
  int64_t total_tokens = 0;
  std::set<int64_t> seen_blocks[K];
  std::vector<int64_t> picks[K];  // which of its own blocks each worker drew, in order
  for (int r = 0; r < K; ++r) {
    Shard shard(corpus, r, K, ShardMode::iid, T, /*seed=*/7);
    total_tokens += shard.num_tokens();
    for (int step = 0; step < 20; ++step) {
      for (const int64_t p : window_offsets(corpus, shard.next(16))) {
        CHECK(p % W == 0);
        CHECK((p / W) % K == r);
        seen_blocks[r].insert(p / W);
        picks[r].push_back(p / W / K);
      }
    }
  }
  CHECK(total_tokens == (3600 / W) * W);
  CHECK(seen_blocks[0].size() > 50);  // draws spread over many blocks, not one
  CHECK(picks[0] != picks[1]);        // the RNG stream depends on the rank, not only the seed
}

TEST_CASE("models/Shard: non_iid worker r draws only from the r-th contiguous quarter") {
  const auto corpus = Corpus::from_text(random_text(4000, 3), 0.1);
  const int K = 4, T = 8;
  const int64_t n = corpus.train().size(0);
  int64_t total_tokens = 0;
  for (int r = 0; r < K; ++r) {
    Shard shard(corpus, r, K, ShardMode::non_iid, T, /*seed=*/7);
    total_tokens += shard.num_tokens();
    int64_t lowest = n, highest = 0;
    for (int step = 0; step < 20; ++step) {
      for (const int64_t p : window_offsets(corpus, shard.next(16))) {
        CHECK(p >= n * r / K);
        CHECK(p + T + 1 <= n * (r + 1) / K);
        lowest = std::min(lowest, p), highest = std::max(highest, p);
      }
    }
    CHECK(highest - lowest > n / K / 2);  // spread over the range, not stuck at one place
  }
  CHECK(total_tokens == n);
}

TEST_CASE("models/Shard: same arguments give identical batches, rank and seed change them") {
  const auto corpus = Corpus::from_text(random_text(4000, 4), 0.1);
  for (const ShardMode mode : {ShardMode::iid, ShardMode::non_iid}) {
    Shard a(corpus, 1, 4, mode, 16, 42), b(corpus, 1, 4, mode, 16, 42);
    Shard other_rank(corpus, 2, 4, mode, 16, 42), other_seed(corpus, 1, 4, mode, 16, 43);
    for (int step = 0; step < 3; ++step) {
      const Batch x = a.next(8), y = b.next(8);
      CHECK(torch::equal(x.x_BT, y.x_BT));
      CHECK(torch::equal(x.y_BT, y.y_BT));
      CHECK_FALSE(torch::equal(x.x_BT, other_rank.next(8).x_BT));
      CHECK_FALSE(torch::equal(x.x_BT, other_seed.next(8).x_BT));
    }
  }
}

TEST_CASE("models/Shard: y is x shifted by one token, shapes are (B, T) int64") {
  const auto corpus = Corpus::from_text(random_text(2000, 5), 0.1);
  Shard shard(corpus, 0, 2, ShardMode::non_iid, 12, 1);
  const Batch batch = shard.next(5);
  CHECK((batch.x_BT.sizes() == torch::IntArrayRef({5, 12})));
  CHECK((batch.y_BT.sizes() == torch::IntArrayRef({5, 12})));
  CHECK((batch.x_BT.scalar_type() == torch::kInt64));
  CHECK(torch::equal(batch.x_BT.narrow(1, 1, 11), batch.y_BT.narrow(1, 0, 11)));
  // and the last target really is the token after the window
  const auto p = window_offsets(corpus, batch)[0];
  CHECK(batch.y_BT[0][11].item<int64_t>() == corpus.train()[p + 12].item<int64_t>());
}

TEST_CASE("models/Shard: a slice shorter than seq_len+1 is refused with a clear message") {
  const auto corpus = Corpus::from_text(random_text(100, 6), 0.0);
  CHECK_NOTHROW(Shard(corpus, 3, 4, ShardMode::non_iid, 24, 1));  // 25 tokens each: just fits
  CHECK_THROWS_WITH_AS(Shard(corpus, 3, 4, ShardMode::non_iid, 25, 1),
                       doctest::Contains("fewer than seq_len+1 = 26"), std::invalid_argument);
  CHECK_THROWS_AS(Shard(corpus, 3, 4, ShardMode::iid, 30, 1), std::invalid_argument);  // 3 blocks
  CHECK_THROWS_AS(Shard(corpus, 4, 4, ShardMode::iid, 8, 1), std::invalid_argument);   // bad rank
}

TEST_CASE("models/Shard: each rank's share is counted before any batch, and is what its batches come from") {
  const auto corpus = Corpus::from_text(random_text(100, 8), 0.0);  // 11 blocks of 9 tokens, 1 left over
  const std::vector<int64_t> iid = {27, 27, 27, 18};                // blocks {0,4,8} {1,5,9} {2,6,10} {3,7}
  const std::vector<int64_t> non_iid = {25, 25, 25, 25};
  for (int r = 0; r < 4; ++r) {
    CHECK(Shard(corpus, r, 4, ShardMode::iid, 8, 1).num_tokens() == iid[static_cast<size_t>(r)]);
    CHECK(Shard(corpus, r, 4, ShardMode::non_iid, 8, 1).num_tokens() == non_iid[static_cast<size_t>(r)]);
  }
  CHECK_NOTHROW(Shard(corpus, 10, 11, ShardMode::iid, 8, 1));  // the last block's one rank
  CHECK_THROWS_WITH_AS(Shard(corpus, 11, 12, ShardMode::iid, 8, 1), doctest::Contains("gets 0 of the 100"),
                       std::invalid_argument);
  // Rank 3 draws from blocks 3 and 7 only, made before others draw or long after: the same batches.
  Shard early(corpus, 3, 4, ShardMode::iid, 8, 5);
  const Batch first = early.next(6);
  Shard other(corpus, 2, 4, ShardMode::iid, 8, 5);
  other.next(6);
  Shard late(corpus, 3, 4, ShardMode::iid, 8, 5);
  const Batch again = late.next(6);
  CHECK(torch::equal(first.x_BT, again.x_BT));
  for (const int64_t p : window_offsets(corpus, first)) CHECK((p == 27 || p == 63));
}

TEST_CASE("models/eval_batch: fixed windows of the eval split, shifted targets, refuses a short split") {
  const auto corpus = Corpus::from_text(random_text(2000, 7), 0.25);  // 500 eval tokens
  const int T = 9, W = T + 1;
  const Batch first = eval_batch(corpus, 0, 4, T);
  CHECK(torch::equal(first.x_BT, eval_batch(corpus, 0, 4, T).x_BT));
  CHECK(torch::equal(first.x_BT.narrow(1, 1, T - 1), first.y_BT.narrow(1, 0, T - 1)));
  for (int b = 0; b < 4; ++b) {  // window b starts at b*(T+1) of the eval split
    CHECK(torch::equal(first.x_BT[b], corpus.eval().narrow(0, b * W, T)));
    CHECK(torch::equal(first.y_BT[b], corpus.eval().narrow(0, b * W + 1, T)));
  }
  const Batch second = eval_batch(corpus, 1, 4, T);
  CHECK(torch::equal(second.x_BT[0], corpus.eval().narrow(0, 4 * W, T)));
  CHECK(torch::equal(eval_batch(corpus, 50, 1, T).x_BT[0], corpus.eval().narrow(0, 0, T)));  // wraps
  CHECK_THROWS_AS(eval_batch(corpus, 0, 4, 500), std::invalid_argument);
}
