// Wire formats: exact byte counts and rounding within each format's bound (e3m0: its grid, by hand);
// the rank-order mean.
#include "algorithms/codec.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/transport.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;

TEST_CASE("wire formats count their bytes exactly") {
  CHECK(wire_bytes(WireFormat::fp32, 1000) == 4000);
  CHECK(wire_bytes(WireFormat::fp16, 1000) == 2000);
  CHECK(wire_bytes(WireFormat::bf16, 1001) == 2002);
  std::vector<torch::Tensor> xs = {torch::zeros({3, 4}), torch::zeros({5})};
  CHECK(wire_bytes(xs, WireFormat::fp16) == 2.0 * 17);
}

TEST_CASE("wire formats really round, within their relative bound") {
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({4096});
  // Round-to-nearest relative error bound: 2^-(mantissa bits + 1).
  struct Case { WireFormat format; double bound; };
  for (Case c : {Case{WireFormat::fp16, std::ldexp(1.0, -11)}, Case{WireFormat::bf16, std::ldexp(1.0, -8)}}) {
    torch::Tensor y = through_wire(x, c.format);
    CHECK((y.scalar_type() == torch::kFloat32));  // parenthesized: c10's toString(ScalarType) confuses doctest
    double worst = ((y - x).abs() / x.abs()).max().item<double>();
    CHECK(worst <= c.bound);
    CHECK(worst > 0);  // it did round
  }
  CHECK(torch::equal(through_wire(x, WireFormat::fp32), x));
}

TEST_CASE("the mean is taken in rank order and rounded to the wire format") {
  std::vector<std::vector<torch::Tensor>> contributions = {{torch::tensor({1.0f, 2.0f})},
                                                           {torch::tensor({3.0f, 4.0f})},
                                                           {torch::tensor({5.0f, 1e-4f})}};
  auto mean = mean_in_rank_order(contributions, WireFormat::fp32);
  CHECK(mean[0][0].item<float>() == doctest::Approx(3.0f));
  CHECK(mean[0][1].item<float>() == doctest::Approx((2.0f + 4.0f + 1e-4f) / 3.0f));
  auto mean16 = mean_in_rank_order(contributions, WireFormat::fp16);
  CHECK(mean16[0][1].item<float>() == through_wire(mean[0].slice(0, 1, 2), WireFormat::fp16).item<float>());
}

TEST_CASE("codec: int8 and int4 count values plus one fp32 scale per 64-value block") {
  CHECK(wire_bytes(WireFormat::int8, 1000) == 1000 + 4 * 16);
  CHECK(wire_bytes(WireFormat::int4, 1000) == 500 + 4 * 16);
  CHECK(wire_bytes(WireFormat::int4, 1001) == 501 + 4 * 16);
  CHECK(wire_bytes(WireFormat::int8, 64) == 64 + 4);
  CHECK(wire_bytes(WireFormat::int4, 65) == 33 + 4 * 2);
  CHECK(wire_bytes(WireFormat::int4, 0) == 0);
  // The encoder produces exactly that many bytes.
  torch::manual_seed(1);
  for (int64_t n : {1, 63, 64, 65, 1001}) {
    for (WireFormat f : {WireFormat::int8, WireFormat::int4}) {
      CAPTURE(n);
      torch::Tensor bytes = encode_quantized(torch::randn({n}), f);
      CHECK(static_cast<double>(bytes.numel()) == wire_bytes(f, n));
      CHECK((bytes.scalar_type() == torch::kUInt8));
    }
  }
}

TEST_CASE("codec: int8 and int4 round within half a step of their block's scale") {
  torch::manual_seed(2);
  // Blocks of very different magnitudes: each keeps its own precision (one scale per block).
  torch::Tensor x = torch::cat({torch::randn({64}) * 1e-3, torch::randn({64}) * 1e3, torch::randn({4096 + 37})});
  const int64_t n = x.numel(), blocks = (n + 63) / 64;
  torch::Tensor padded = torch::zeros({blocks * 64});
  padded.slice(0, 0, n).copy_(x);
  torch::Tensor absmax_B = padded.view({blocks, 64}).abs().amax(1);
  struct Case { WireFormat format; double q_max; };
  for (Case c : {Case{WireFormat::int8, 127}, Case{WireFormat::int4, 7}}) {
    CAPTURE(wire_format_name(c.format));
    torch::Tensor y = through_wire(x, c.format);
    CHECK((y.scalar_type() == torch::kFloat32));
    CHECK(y.sizes() == x.sizes());
    torch::Tensor err = torch::zeros({blocks * 64});
    err.slice(0, 0, n).copy_((y - x).abs());
    torch::Tensor half_step_B = absmax_B / c.q_max / 2;
    // |x - y| <= s/2 per block, s = absmax/q_max (plus fp32 rounding of x/s and q·s).
    torch::Tensor excess_B = err.view({blocks, 64}).amax(1) - half_step_B * (1 + 1e-5);
    CHECK(excess_B.max().item<double>() <= 0);
    CHECK(err.max().item<double>() > 0);  // it did round
    // The largest error in a block comes near its bound: the values really sit on a coarse grid.
    CHECK((err.view({blocks, 64}).amax(1) / half_step_B).slice(0, 2).mean().item<double>() > 0.8);
  }
}

TEST_CASE("codec: int4 packs signed values exactly and zero blocks stay zero") {
  // Values already on the grid of a block whose absmax is 7·0.5: they travel exactly, odd count included.
  torch::Tensor grid = torch::arange(-7, 8, torch::kFloat32) * 0.5;  // 15 values
  CHECK(torch::equal(through_wire(grid, WireFormat::int4), grid));
  // One block of 64 with absmax 127·0.25, so its scale is exactly 0.25.
  torch::Tensor grid8 = torch::cat({torch::arange(-31, 32, torch::kFloat32) * 0.25, torch::tensor({31.75f})});
  CHECK(torch::equal(through_wire(grid8, WireFormat::int8), grid8));
  torch::Tensor zeros = torch::zeros({3, 50});
  CHECK(torch::equal(through_wire(zeros, WireFormat::int4), zeros));
  CHECK(wire_format_from_name("int4") == WireFormat::int4);
  CHECK(wire_format_name(WireFormat::int8) == "int8");
}

TEST_CASE("codec: e3m0 rounds to the nearest power of two times its block's absmax, keeping zero and signs") {
  // Block 0 (64 values): absmax 4, so the scale is 4 and the grid is ±4·{2^-6 .. 2^0} = ±{1/16 .. 4}, and 0.
  // Block 1 (3 values): absmax 0.75, not a power of two: the grid is ±0.75·{2^-6 .. 1}.
  const std::vector<std::pair<float, float>> block0 = {
      {4.0f, 4.0f},     {-2.0f, -2.0f},   {1.0f, 1.0f},       {0.5f, 0.5f},  // powers of two: exact
      {-0.25f, -0.25f}, {0.125f, 0.125f}, {0.0625f, 0.0625f},                // down to 4·2^-6
      {0.0f, 0.0f},                                                          // zero
      {2.9f, 2.0f},     {3.1f, 4.0f},     {3.0f, 4.0f},                      // 2..4: midpoint 3, a tie goes up
      {-1.4f, -1.0f},   {-1.6f, -2.0f},   {-1.5f, -2.0f},                    // signs kept
      {0.04f, 0.0625f}, {0.03125f, 0.0625f},  // 4·2^-7 = 1/32: the midpoint of 0 and 1/16
      {0.03f, 0.0f},    {-0.01f, 0.0f},       // below it: zero
  };
  const std::vector<std::pair<float, float>> block1 = {{0.75f, 0.75f}, {0.5f, 0.375f}, {-0.6f, -0.75f}};
  torch::Tensor x = torch::zeros({64 + 3}), expected = torch::zeros({64 + 3});
  for (size_t i = 0; i < block0.size(); ++i) {
    x[i] = block0[i].first;
    expected[i] = block0[i].second;
  }
  for (size_t i = 0; i < block1.size(); ++i) {
    x[64 + i] = block1[i].first;
    expected[64 + i] = block1[i].second;
  }
  torch::Tensor y = through_wire(x, WireFormat::e3m0);
  CHECK((y.scalar_type() == torch::kFloat32));
  CHECK(torch::equal(y, expected));
  CHECK_FALSE(std::signbit(y[17].item<float>()));  // −0.01 comes back as +0

  // The bytes: nibble = sign·8 + exponent field (e ↦ ±s·2^(e−7), 0 ↦ 0), element 2j low, 2j+1 high;
  // then one fp32 scale per block, the block's absmax.
  torch::Tensor bytes = encode_quantized(x, WireFormat::e3m0);
  REQUIRE(bytes.numel() == 34 + 8);
  CHECK(bytes[0].item<uint8_t>() == (7 | (8 + 6) << 4));  // 4 = 4·2^0 (e 7), −2 = −4·2^-1 (sign, e 6)
  CHECK(bytes[3].item<uint8_t>() == (1 | 0 << 4));        // 1/16 = 4·2^-6 (e 1), 0 (e 0)
  CHECK(bytes[33].item<uint8_t>() == (8 + 7));            // the last, odd element (−0.75: sign, e 7) and padding
  float scales[2];
  std::memcpy(scales, bytes.data_ptr<uint8_t>() + 34, sizeof(scales));
  CHECK(scales[0] == 4.0f);
  CHECK(scales[1] == 0.75f);
  CHECK(torch::equal(decode_quantized(bytes, WireFormat::e3m0, x.numel()), expected));

  // Values on the grid travel exactly; zero blocks stay zero.
  CHECK(torch::equal(through_wire(y, WireFormat::e3m0), y));
  torch::Tensor zeros = torch::zeros({3, 50});
  CHECK(torch::equal(through_wire(zeros, WireFormat::e3m0), zeros));
}

TEST_CASE("codec: e3m0 counts nibbles plus one fp32 scale per 64 values, and is not int4") {
  CHECK(wire_bytes(WireFormat::e3m0, 1000) == 500 + 4 * 16);
  CHECK(wire_bytes(WireFormat::e3m0, 1001) == 501 + 4 * 16);
  CHECK(wire_bytes(WireFormat::e3m0, 65) == 33 + 4 * 2);
  CHECK(wire_bytes(WireFormat::e3m0, 0) == 0);
  torch::manual_seed(3);
  for (int64_t n : {1, 63, 64, 65, 1001}) {
    CAPTURE(n);
    torch::Tensor bytes = encode_quantized(torch::randn({n}), WireFormat::e3m0);
    CHECK(static_cast<double>(bytes.numel()) == wire_bytes(WireFormat::e3m0, n));
    CHECK(static_cast<double>(bytes.numel()) == wire_bytes(WireFormat::int4, n));
  }
  CHECK(wire_format_from_name("e3m0") == WireFormat::e3m0);
  CHECK(wire_format_name(WireFormat::e3m0) == "e3m0");
  CHECK(std::count(wire_format_names().begin(), wire_format_names().end(), "e3m0") == 1);

  // On a random tensor: every value is 0 or ±absmax·2^-k (k 0..6) of its block, within a third of
  // itself where |x| >= absmax·2^-6 (the nearest power of two is off by at most 1/3 relative), and the
  // result is not int4's.
  torch::Tensor x = torch::randn({4096 + 37}) * 3;
  torch::Tensor y = through_wire(x, WireFormat::e3m0);
  const int64_t n = x.numel(), blocks = (n + 63) / 64;
  torch::Tensor padded = torch::zeros({blocks * 64});
  padded.slice(0, 0, n).copy_(x);
  torch::Tensor absmax =
      padded.view({blocks, 64}).abs().amax(1, true).expand({blocks, 64}).reshape({-1}).slice(0, 0, n);
  torch::Tensor r = y.abs() / absmax;
  torch::Tensor nonzero = r.gt(0);
  torch::Tensor log2r = torch::log2(r.masked_select(nonzero));
  CHECK(torch::equal(log2r.round(), log2r));  // powers of two
  CHECK(log2r.min().item<double>() >= -6);
  CHECK(r.max().item<double>() == 1.0);
  torch::Tensor in_range = x.abs() >= absmax * std::ldexp(1.0, -6);
  CHECK(((y - x).abs() - x.abs() / 3).masked_select(in_range).max().item<double>() <= 1e-6);
  CHECK(torch::equal(y.sign().masked_select(nonzero), x.sign().masked_select(nonzero)));
  torch::Tensor y4 = through_wire(x, WireFormat::int4);
  CHECK(!torch::equal(y, y4));
  CHECK(y.ne(y4).to(torch::kFloat).mean().item<double>() > 0.5);  // most values differ, not a few
}
