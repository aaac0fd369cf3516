// Wire formats: exact byte counts and rounding within each format's bound; the rank-order mean.
#include "algorithms/codec.hpp"

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
