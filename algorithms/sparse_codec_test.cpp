// Top-k payloads: exact bytes, what decode puts back, conservation of momentum, rank-order means,
// and the two index formats (packed, int64) carrying the same positions.
#include "algorithms/sparse_codec.hpp"

#include <algorithm>

#include "algorithms/dct.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;

namespace {

double largest_abs(const torch::Tensor& x) { return x.abs().max().item<double>(); }

}  // namespace

TEST_CASE("sparse: indices take the smallest unsigned integer that holds a chunk position") {
  CHECK(index_bytes(64) == 1);
  CHECK(index_bytes(256) == 1);
  CHECK(index_bytes(257) == 2);
  CHECK(index_bytes(4096) == 2);
  CHECK(index_bytes(65536) == 2);
  CHECK(index_bytes(65537) == 4);
  CHECK(index_bytes(int64_t{1} << 32) == 4);
  CHECK(index_bytes((int64_t{1} << 32) + 1) == 8);
}

TEST_CASE("sparse: byte counts follow chunks times k times (b_idx + b_val) and equal the payload's nbytes") {
  struct Case { int64_t chunks, chunk_numel, k; SparseValues values; double bytes; };
  const Case cases[] = {
      {3, 4096, 32, SparseValues::fp16, 3 * 32 * (2 + 2)},       // 64×64 blocks: uint16 + fp16
      {3, 4096, 32, SparseValues::bf16, 3 * 32 * (2 + 2)},
      {5, 64, 32, SparseValues::fp16, 5 * 32 * (1 + 2)},         // 1-D chunks: uint8 + fp16
      {3, 4096, 32, SparseValues::sign, 3 * 32 * 2 + 12 + 4},    // 96 bits = 12 bytes, fp32 scale
      {3, 4096, 5, SparseValues::sign, 3 * 5 * 2 + 2 + 4},       // 15 bits round up to 2 bytes
      {1, 16, 32, SparseValues::fp16, 16 * 2},                   // fits in k: sent whole, no indices
      {1, 16, 32, SparseValues::sign, 2 + 4},
  };
  torch::manual_seed(3);
  for (const Case& c : cases) {
    CAPTURE(c.chunk_numel);
    CAPTURE(c.k);
    CAPTURE(sparse_values_name(c.values));
    CHECK(sparse_bytes(c.chunks, c.chunk_numel, c.k, c.values) == c.bytes);
    SparseCodec codec(c.chunks, c.chunk_numel, c.k, c.values);
    CHECK(codec.bytes() == c.bytes);
    SparsePayload p = codec.encode(torch::randn({c.chunks, c.chunk_numel}));
    CHECK(p.bytes() == c.bytes);
  }
}

TEST_CASE("sparse: top-k keeps the k largest magnitudes of each chunk and decode puts them back") {
  // Two chunks of 300 (uint16 positions): the kept positions are known by construction.
  torch::Tensor x = torch::full({2, 300}, 0.01);
  x[0][7] = -5.0;
  x[0][299] = 4.0;
  x[0][256] = 3.0;  // needs the high byte of the position
  x[1][0] = 2.5;
  x[1][150] = -1.0 / 3.0;
  x[1][280] = 7.0;
  SparseCodec codec(2, 300, 3, SparseValues::fp16);
  torch::Tensor back = codec.decode(codec.encode(x));
  torch::Tensor expected = torch::zeros({2, 300});
  for (auto [r, c] : {std::pair{0, 7}, {0, 299}, {0, 256}, {1, 0}, {1, 150}, {1, 280}}) {
    expected[r][c] = x[r][c].to(torch::kHalf).to(torch::kFloat);  // what fp16 makes of it
  }
  CHECK(torch::equal(back, expected));
  // −1/3 is not an fp16 number: the wire really rounded it.
  CHECK(back[1][150].item<float>() != x[1][150].item<float>());

  SparseCodec sign(2, 300, 3, SparseValues::sign);
  torch::Tensor signs = sign.decode(sign.encode(x));
  const float scale = (5.0f + 4.0f + 3.0f + 2.5f + 1.0f / 3.0f + 7.0f) / 6.0f;  // mean |kept|
  CHECK(signs[0][7].item<float>() == doctest::Approx(-scale).epsilon(1e-6));
  CHECK(signs[1][280].item<float>() == doctest::Approx(scale).epsilon(1e-6));
  CHECK(signs[1][150].item<float>() == doctest::Approx(-scale).epsilon(1e-6));
  CHECK(signs.ne(0).sum().item<int64_t>() == 6);
}

TEST_CASE("sparse: momentum before = momentum after + the decoded transmitted part") {
  torch::manual_seed(4);
  for (SparseValues values : {SparseValues::fp16, SparseValues::sign}) {
    CAPTURE(sparse_values_name(values));
    // 128 × 64 (two unpadded blocks) and the tiny model's padded 176 × 64.
    for (std::vector<int64_t> shape : {std::vector<int64_t>{128, 64}, std::vector<int64_t>{176, 64}}) {
      ChunkedDct dct(shape, 64);
      SparseCodec codec(dct.layout().chunks(), dct.layout().chunk_numel(), 32, values);
      torch::Tensor before = torch::randn(shape);
      torch::Tensor coefficients = dct.encode(before);
      SparsePayload q = codec.encode(coefficients);
      torch::Tensor transmitted = dct.decode(codec.decode(q));
      torch::Tensor after = before - transmitted;  // the policy's δ ← δ − IDCT(decode(q))
      CHECK(largest_abs(before - (after + transmitted)) < 1e-5);
      CHECK(largest_abs(transmitted) > 0.01);  // something was sent
      if (!dct.layout().padded()) {
        // In the DCT domain the residual is X with the kept coefficients replaced by what the wire
        // lost of them: elsewhere unchanged.
        torch::Tensor kept = codec.decode(q).ne(0);
        torch::Tensor left = dct.encode(after);
        CHECK(largest_abs(torch::where(kept, torch::zeros_like(left), left - coefficients)) < 1e-5);
        if (values == SparseValues::fp16) {
          CHECK(largest_abs(torch::where(kept, left, torch::zeros_like(left))) <= largest_abs(coefficients) * 1e-3);
          // The fast components left δ: ‖δ_after‖² = ‖δ_before‖² − Σ kept X² (orthonormal), up to rounding.
          double kept_energy = torch::where(kept, coefficients, torch::zeros_like(left)).pow(2).sum().item<double>();
          CHECK(kept_energy > 0.05 * before.pow(2).sum().item<double>());
          CHECK(after.pow(2).sum().item<double>() ==
                doctest::Approx(before.pow(2).sum().item<double>() - kept_energy).epsilon(1e-4));
        }
      }
    }
  }
}

TEST_CASE("sparse: the mean decode is bit-identical whatever order the payloads arrive in") {
  torch::manual_seed(5);
  const int world = 4;
  SparseCodec codec(6, 64, 8, SparseValues::fp16);
  std::vector<SparsePayload> payloads;
  // The same large coefficients on every worker, so most kept positions have 4 senders, at scales
  // 1e-3 .. 1e3 apart: fp32 sums of fp16 values of similar size are exact in any order, these are not.
  torch::Tensor common = torch::randn({6, 64}) * 10;
  const double scales[world] = {1.0, 1e3, 1e-3, 30.0};
  for (int r = 0; r < world; ++r) {
    payloads.push_back(codec.encode((common + torch::randn({6, 64})) * scales[r]));
  }
  torch::Tensor reference = codec.mean_decode(payloads);

  std::vector<int> arrival = {0, 1, 2, 3};
  bool naive_differs = false;
  do {
    // A receiver files each payload under its sender's rank as it arrives: the mean reads by rank.
    std::vector<SparsePayload> by_rank(world);
    for (int r : arrival) by_rank[r] = payloads[r];
    CHECK(torch::equal(codec.mean_decode(by_rank), reference));
    // Summing in arrival order instead really changes bits for some orders (fp32 is not associative).
    torch::Tensor sum = torch::zeros({6, 64}), count = torch::zeros({6, 64});
    for (int r : arrival) {
      torch::Tensor dense = codec.decode(payloads[r]);
      sum.add_(dense);
      count.add_(dense.ne(0).to(torch::kFloat));
    }
    naive_differs = naive_differs || !torch::equal(sum / count.clamp_min(1), reference);
  } while (std::next_permutation(arrival.begin(), arrival.end()));
  CHECK(naive_differs);

  // A coefficient is averaged over the workers that sent it (DeMo's scatter_reduce "mean").
  std::vector<torch::Tensor> dense;
  for (const auto& p : payloads) dense.push_back(codec.decode(p));
  torch::Tensor sent = torch::zeros({6, 64}), total = torch::zeros({6, 64});
  for (const auto& d : dense) {
    total.add_(d);
    sent.add_(d.ne(0).to(torch::kFloat));
  }
  CHECK(sent.max().item<double>() >= 2);  // some coefficients were sent by several workers
  CHECK(largest_abs(reference - total / sent.clamp_min(1)) < 1e-6);
}

TEST_CASE("sparse: int64 indices weigh 8 bytes each, always, and decode to what packed indices decode to") {
  struct Case { int64_t chunks, chunk_numel, k; SparseValues values; double bytes; };
  const Case cases[] = {
      {3, 4096, 32, SparseValues::fp32, 3 * 32 * (8 + 4)},       // demo.py's wire for fp32 parameters
      {3, 4096, 32, SparseValues::fp16, 3 * 32 * (8 + 2)},
      {5, 64, 32, SparseValues::fp32, 5 * 32 * (8 + 4)},
      {3, 4096, 5, SparseValues::sign, 3 * 5 * 8 + 2 + 4},
      {2, 16, 32, SparseValues::fp32, 2 * 16 * (8 + 4)},         // k clamped to the chunk, positions still sent
  };
  torch::manual_seed(6);
  for (const Case& c : cases) {
    CAPTURE(c.chunk_numel);
    CAPTURE(c.k);
    CAPTURE(sparse_values_name(c.values));
    CHECK(sparse_bytes(c.chunks, c.chunk_numel, c.k, c.values, SparseIndices::int64) == c.bytes);
    SparseCodec wide(c.chunks, c.chunk_numel, c.k, c.values, SparseIndices::int64);
    SparseCodec packed(c.chunks, c.chunk_numel, c.k, c.values, SparseIndices::packed);
    CHECK(wide.bytes() == c.bytes);
    CHECK(packed.bytes() < c.bytes);
    std::vector<SparsePayload> wide_q, packed_q;
    for (int r = 0; r < 3; ++r) {
      torch::Tensor x = torch::randn({c.chunks, c.chunk_numel});
      wide_q.push_back(wide.encode(x));
      packed_q.push_back(packed.encode(x));
      const SparsePayload& q = wide_q.back();
      CHECK(q.bytes() == c.bytes);
      CHECK((q.indices.scalar_type() == torch::kLong));
      CHECK(q.indices.sizes() == torch::IntArrayRef({c.chunks, std::min(c.k, c.chunk_numel)}));
      CHECK(torch::equal(wide.decode(q), packed.decode(packed_q.back())));
      if (c.values == SparseValues::fp32) {  // fp32 values travel exactly: the kept coefficients are x's own
        torch::Tensor back = wide.decode(q);
        CHECK(torch::equal(torch::where(back.ne(0), x, torch::zeros_like(x)), back));
      }
    }
    CHECK(torch::equal(wide.mean_decode(wide_q), packed.mean_decode(packed_q)));
  }
  CHECK(sparse_indices_from_name("int64") == SparseIndices::int64);
  CHECK(sparse_indices_name(SparseIndices::packed) == "packed");
  CHECK(sparse_values_from_name("fp32") == SparseValues::fp32);
}

// runtime.device: DeMo's DCT and sparse codec make their tensors on their input's device. Run on torch's
// meta device (shapes, no values), a tensor made on the CPU and mixed in fails the operation, so this
// checks on a CPU-only LibTorch what a GPU run relies on. LibTorch 1.13 has no meta kernel for abs, so
// only whole chunks in the float formats run here (top-k and the sign format take |X|).
TEST_CASE("sparse: the DCT and whole-chunk payloads keep their input's device") {
  const auto on_meta = [](const torch::Tensor& t) { return t.device().type() == torch::kMeta; };
  const torch::Tensor weight = torch::empty({48, 40}, torch::TensorOptions(torch::kFloat32).device(torch::kMeta));
  const ChunkedDct dct({48, 40}, 16);
  const torch::Tensor coefficients = dct.encode(weight);
  CHECK(on_meta(coefficients));
  CHECK(on_meta(dct.decode(coefficients)));
  const ChunkLayout& l = dct.layout();
  for (SparseValues values : {SparseValues::fp32, SparseValues::fp16, SparseValues::bf16}) {
    for (SparseIndices indices : {SparseIndices::packed, SparseIndices::int64}) {  // implicit and explicit positions
      CAPTURE(sparse_values_name(values));
      CAPTURE(sparse_indices_name(indices));
      const SparseCodec codec(l.chunks(), l.chunk_numel(), l.chunk_numel(), values, indices);
      const SparsePayload payload = codec.encode(coefficients);
      CHECK(on_meta(payload.values));
      CHECK(on_meta(payload.indices));
      CHECK(on_meta(payload.scale));
      const torch::Tensor mean = codec.mean_decode({payload, payload, payload});
      CHECK(on_meta(codec.decode(payload)));
      CHECK(on_meta(mean));
      CHECK(mean.sizes() == coefficients.sizes());
    }
  }
}
