// The chunked DCT against its definition: orthonormal bases, exact round trips, a slow reference.
#include "algorithms/dct.hpp"

#include <cmath>

#include "tests/doctest_torch.hpp"

using namespace locosim;

namespace {

double max_abs(const torch::Tensor& x) { return x.abs().max().item<double>(); }

// X[a][b] = Σ_i Σ_j c_a c_b cos(π(2i+1)a/2R) cos(π(2j+1)b/2C) x[i][j], in double, with plain loops:
// the textbook 2-D DCT-II of one R×C block (Ahmed, Natarajan & Rao 1974), orthonormal scaling.
std::vector<double> reference_dct_2d(const std::vector<double>& x, int R, int C) {
  auto c = [](int k, int n) { return std::sqrt((k == 0 ? 1.0 : 2.0) / n); };
  std::vector<double> out(R * C, 0.0);
  for (int a = 0; a < R; ++a)
    for (int b = 0; b < C; ++b)
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j)
          out[a * C + b] += c(a, R) * c(b, C) * std::cos(M_PI * (2 * i + 1) * a / (2.0 * R)) *
                            std::cos(M_PI * (2 * j + 1) * b / (2.0 * C)) * x[i * C + j];
  return out;
}

}  // namespace

TEST_CASE("dct: the basis is orthonormal and has the DCT-II values") {
  for (int64_t n : {1, 4, 44, 64}) {
    CAPTURE(n);
    torch::Tensor d = dct_basis(n);
    CHECK(d.size(0) == n);
    CHECK(max_abs(torch::matmul(d, d.t()) - torch::eye(n)) < 1e-6);
    CHECK(max_abs(torch::matmul(d.t(), d) - torch::eye(n)) < 1e-6);
  }
  // n = 4: row 0 is 1/2 everywhere, row 1 starts with √(1/2)·cos(π/8) = 0.65328.
  torch::Tensor d4 = dct_basis(4);
  CHECK(d4[0][3].item<double>() == doctest::Approx(0.5).epsilon(1e-6));
  CHECK(d4[1][0].item<double>() == doctest::Approx(std::sqrt(0.5) * std::cos(M_PI / 8)).epsilon(1e-6));
  CHECK(d4[1][3].item<double>() == doctest::Approx(-std::sqrt(0.5) * std::cos(M_PI / 8)).epsilon(1e-6));
}

TEST_CASE("dct: layouts cut 1-D into chunks of s and matrices into s by s blocks, padding the tails") {
  ChunkLayout norm = chunk_layout({64}, 64);
  CHECK(norm.chunks() == 1);
  CHECK(norm.chunk_numel() == 64);
  CHECK(!norm.padded());
  ChunkLayout vec = chunk_layout({200}, 64);  // 3 full chunks and one of 8 values + 56 zeros
  CHECK(vec.chunks() == 4);
  CHECK(vec.chunk_numel() == 64);
  CHECK(vec.padded());
  ChunkLayout ffn = chunk_layout({176, 64}, 64);  // the tiny model's SwiGLU matrices: 3 × 1 blocks
  CHECK(ffn.row_blocks == 3);
  CHECK(ffn.col_blocks == 1);
  CHECK(ffn.chunk_numel() == 4096);
  CHECK(ffn.padded());
  ChunkLayout small = chunk_layout({5, 7}, 64);  // shorter than s on both axes: one 5 × 7 chunk
  CHECK(small.chunks() == 1);
  CHECK(small.chunk_numel() == 35);
  CHECK(!small.padded());
  ChunkLayout cube = chunk_layout({3, 4, 32}, 64);  // 3-D: 3 × 128
  CHECK(cube.rows == 3);
  CHECK(cube.cols == 128);
  CHECK(cube.chunks() == 2);
}

TEST_CASE("dct: encode then decode gives the tensor back within 1e-5 and keeps its energy") {
  torch::manual_seed(1);
  const std::vector<std::vector<int64_t>> shapes = {{64}, {200}, {10}, {64, 64}, {176, 64}, {64, 176}, {5, 7}};
  for (const auto& shape : shapes) {
    CAPTURE(shape.size());
    CAPTURE(shape[0]);
    ChunkedDct dct(shape, 64);
    torch::Tensor x = torch::randn(shape);
    torch::Tensor coefficients = dct.encode(x);
    CHECK(coefficients.size(0) == dct.layout().chunks());
    CHECK(coefficients.size(1) == dct.layout().chunk_numel());
    torch::Tensor back = dct.decode(coefficients);
    CHECK(back.sizes() == x.sizes());
    CHECK(max_abs(back - x) < 1e-5);
    // Orthonormal: ‖X‖ = ‖x‖ (zero padding adds no energy).
    CHECK(coefficients.norm().item<double>() == doctest::Approx(x.norm().item<double>()).epsilon(1e-5));
  }
}

TEST_CASE("dct: a padded matrix's blocks match the textbook 2-D DCT-II computed by loops") {
  // 4 × 6 in blocks of 4: one 4 × 4 block and one 4 × 4 block whose last 2 columns are padding.
  torch::manual_seed(2);
  torch::Tensor x = torch::randn({4, 6}, torch::kFloat64);
  ChunkedDct dct({4, 6}, 4);
  torch::Tensor got = dct.encode(x.to(torch::kFloat32)).to(torch::kFloat64);
  REQUIRE(got.size(0) == 2);
  for (int block = 0; block < 2; ++block) {
    std::vector<double> b(16, 0.0);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        int col = block * 4 + j;
        b[i * 4 + j] = col < 6 ? x[i][col].item<double>() : 0.0;
      }
    std::vector<double> want = reference_dct_2d(b, 4, 4);
    for (int e = 0; e < 16; ++e) CHECK(got[block][e].item<double>() == doctest::Approx(want[e]).epsilon(1e-5));
  }
}
