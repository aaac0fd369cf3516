// DeMo on the in-process transport: its config, the bytes it charges (packed and as demo.py sends
// them), an identity with sign-SGD, that the index format is bytes only, the DisTrO report's byte
// check, and that it trains.
#include "algorithms/demo.hpp"

#include "algorithms/policy_test_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

namespace {

// One worker alone; records what each all-gather is charged and carries.
class OneWorker : public Transport {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Pending all_reduce_mean(std::vector<torch::Tensor>&, Wire) override {
    throw std::logic_error("demo never all-reduces");
  }
  Pending all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                     std::vector<std::vector<torch::Tensor>>& out) override {
    charged_bytes.push_back(bytes);
    double carried = 0;
    for (const auto& x : mine) carried += static_cast<double>(x.nbytes());
    carried_bytes.push_back(carried);
    out.assign(1, {});
    for (const auto& x : mine) out[0].push_back(x.clone());
    return Pending();
  }
  void compute(double flops, const std::function<void()>& work) override {
    charged_flops.push_back(flops);
    work();
  }
  double now_s() const override { return 0; }

  std::vector<double> charged_bytes, carried_bytes, charged_flops;
};

// The 1.2B Llama-2 of the DisTrO report (Table 1): 16 layers, hidden 2048, intermediate 8192,
// 8 heads of 256 (no grouped KV), vocab 32000, untied input and output embeddings.
std::vector<std::vector<int64_t>> distro_1p2b_shapes() {
  const int64_t d = 2048, ffn = 8192, vocab = 32000;
  std::vector<std::vector<int64_t>> shapes = {{vocab, d}, {vocab, d}, {d}};  // embed, lm_head, final norm
  for (int layer = 0; layer < 16; ++layer) {
    for (int m = 0; m < 4; ++m) shapes.push_back({d, d});  // q, k, v, o
    shapes.push_back({ffn, d});                             // gate
    shapes.push_back({ffn, d});                             // up
    shapes.push_back({d, ffn});                             // down
    shapes.push_back({d});                                  // attention norm
    shapes.push_back({d});                                  // ffn norm
  }
  return shapes;
}

// Two workers of `yaml`'s policy on the in-process transport, from `start`, fed grads[step][rank][tensor]
// (plain schedule, constant): each worker's final parameters, by rank.
std::vector<std::vector<torch::Tensor>> run_two_workers(
    const std::string& yaml, const std::vector<torch::Tensor>& start,
    const std::vector<std::vector<std::vector<torch::Tensor>>>& grads) {
  const int steps = static_cast<int>(grads.size());
  const OptimizerConfig opt = plain_sgd(1.0);  // only its schedule shape is used: constant
  std::vector<std::vector<torch::Tensor>> finals(2);
  run_local_workers(2, [&](Transport& t) {
    std::vector<torch::Tensor> params;
    for (const auto& p : start) params.push_back(p.clone().requires_grad_(true));
    PolicyContext ctx{params, &t, opt, steps, 1.0};
    auto policy = make_policy(spec_from(yaml), ctx);
    for (int step = 0; step < steps; ++step) {
      for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[step][t.rank()][i].clone();
      policy->step(step);
    }
    for (auto& p : params) finals[t.rank()].push_back(p.detach().clone());
  });
  return finals;
}

}  // namespace

TEST_CASE("demo: the policy entry parses with the paper's defaults and rejects bad values") {
  PolicySpec spec = spec_from("name: demo\n");
  auto& c = std::any_cast<const DemoConfig&>(spec.config);
  CHECK(c.lr == doctest::Approx(4e-4));
  CHECK(c.momentum_decay == doctest::Approx(0.999));
  CHECK(c.topk == 32);
  CHECK(c.chunk == 64);
  CHECK(c.weight_decay == 0);
  CHECK((c.values == SparseValues::fp16));
  CHECK((c.indices == SparseIndices::packed));
  PolicySpec reference = spec_from("name: demo\nindices: int64\nvalues: fp32\n");
  CHECK((std::any_cast<const DemoConfig&>(reference.config).indices == SparseIndices::int64));
  CHECK((std::any_cast<const DemoConfig&>(reference.config).values == SparseValues::fp32));
  PolicySpec psyche = spec_from("name: demo\nvalues: sign\ntopk: 4\nmomentum_decay: 0.995\n");
  auto& s = std::any_cast<const DemoConfig&>(psyche.config);
  CHECK((s.values == SparseValues::sign));
  CHECK(s.topk == 4);
  CHECK_THROWS_WITH(spec_from("name: demo\ntopk: 0\n"), doctest::Contains("topk: must be >= 1"));
  CHECK_THROWS_WITH(spec_from("name: demo\nmomentum_decay: 1.0\n"), doctest::Contains("momentum_decay: must be in [0, 1)"));
  CHECK_THROWS_WITH(spec_from("name: demo\nvalues: int4\n"), doctest::Contains("values: must be one of"));
  CHECK_THROWS_WITH(spec_from("name: demo\nindices: int32\n"), doctest::Contains("indices: must be one of"));
  CHECK_THROWS_WITH(spec_from("name: demo\ninner_steps: 5\n"), doctest::Contains("unknown key"));
}

TEST_CASE("demo: each step's all-gather is charged chunks times k times (b_idx + b_val), times wire_scale") {
  torch::set_num_threads(1);
  torch::manual_seed(3);
  TinyLlama model(tiny_config());
  std::vector<torch::Tensor> params = model->parameters();
  // By hand, for the tiny model (d 64, SwiGLU 176, vocab 256), s = 64, k = 32: a 1-D norm of 64 is one
  // chunk with uint8 positions (32·(1+2) = 96 B); every matrix is cut in 64×64 blocks with uint16
  // positions (32·(2+2) = 128 B per block), 176 rows or columns padded to 3 blocks.
  double expected = 0;
  for (const auto& p : params) {
    if (p.dim() == 1) {
      expected += 96.0 * ((p.size(0) + 63) / 64);
    } else {
      expected += 128.0 * ((p.size(0) + 63) / 64) * ((p.size(1) + 63) / 64);
    }
  }
  OneWorker transport;
  OptimizerConfig opt;
  PolicyContext ctx{params, &transport, opt, 10, 3.5};
  auto policy = make_policy(spec_from("name: demo\n"), ctx);
  for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
  policy->step(0);
  policy->step(1);
  REQUIRE(transport.charged_bytes.size() == 2);
  CHECK(transport.charged_bytes[0] == expected * 3.5);
  CHECK(transport.carried_bytes[0] == expected);  // what travels weighs what is charged
  CHECK(transport.charged_bytes[1] == expected * 3.5);
  CHECK(expected == 4320);  // 4 embedding blocks; per layer 4 attention + 9 SwiGLU blocks, 2 norms; final norm
}

TEST_CASE("demo: its DCT, top-k and decode are charged as compute around the all-gather, times wire_scale") {
  torch::set_num_threads(1);
  // By hand, s = 64, k = 32 (log2 k = 5): a 64 × 64 matrix is one 64×64 block (DCT: 2·(64+64) = 256
  // FLOPs per element), a 1-D tensor of 100 two 1×64 chunks (128 elements with the padding; DCT:
  // 2·(1+64) = 130). encode = N·(2·DCT + 5 + 3), decode = N·(DCT + 2).
  const double encode = 4096.0 * (2 * 256 + 5 + 3) + 128.0 * (2 * 130 + 5 + 3);
  const double decode = 4096.0 * (256 + 2) + 128.0 * (130 + 2);
  DemoWork w = demo_step_work(DemoConfig{}, {{64, 64}, {100}});
  CHECK(w.encode_flops == encode);
  CHECK(w.decode_flops == decode);

  std::vector<torch::Tensor> params = {torch::randn({64, 64}).requires_grad_(true),
                                       torch::randn({100}).requires_grad_(true)};
  OneWorker transport;
  PolicyContext ctx{params, &transport, OptimizerConfig{}, 10, 2.0};
  auto policy = make_policy(spec_from("name: demo\n"), ctx);
  for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
  policy->step(0);
  REQUIRE(transport.charged_flops.size() == 2);  // encode, then (after the all-gather) decode
  CHECK(transport.charged_flops[0] == encode * 2.0);
  CHECK(transport.charged_flops[1] == decode * 2.0);
}

TEST_CASE("demo: with k covering whole chunks, each step is sign-SGD on the mean gradient") {
  torch::set_num_threads(1);
  // Two tensors: 1-D of 8 (chunks of 4) and 5 × 6 (4 × 4 blocks, padded); k = 16 sends every
  // coefficient, so δ is emptied each step (up to fp16 rounding) and the momentum carries nothing over:
  // step t is p ← p − η·sign(mean_r g_r,t), whatever β. Two steps, β = 0.5: had the residual not been
  // subtracted, step 2 would follow sign(β·mean g_1 + mean g_2) instead.
  const std::vector<std::vector<int64_t>> shapes = {{8}, {5, 6}};
  torch::manual_seed(11);
  // grads[step][rank][tensor]; means[step][tensor]
  std::vector<std::vector<std::vector<torch::Tensor>>> grads(2, std::vector<std::vector<torch::Tensor>>(2));
  std::vector<std::vector<torch::Tensor>> means(2);
  std::vector<torch::Tensor> start;
  for (const auto& shape : shapes) {
    start.push_back(torch::randn(shape));
    for (int step = 0; step < 2; ++step) {
      torch::Tensor u = torch::randn(shape), v = torch::randn(shape);
      if (step == 1) {  // partly undo step 0's direction, so that the residual would matter
        u.add_(grads[0][0].back(), -0.8);
        v.add_(grads[0][1].back(), -0.8);
      }
      v.add_(0.2 * (u + v).sign());  // |mean| >= 0.1 everywhere: fp16 and DCT rounding cannot flip a sign
      grads[step][0].push_back(u);
      grads[step][1].push_back(v);
      means[step].push_back((u + v) / 2);
    }
  }
  auto run = [&](const std::string& yaml) {
    const auto finals = run_two_workers(yaml, start, grads);
    CHECK(max_abs_diff(finals[0], finals[1]) == 0);  // replicas stay identical
    return finals[0];
  };
  std::vector<torch::Tensor> whole = run("name: demo\nlr: 0.01\nmomentum_decay: 0.5\nchunk: 4\ntopk: 16\n");
  std::vector<torch::Tensor> sparse = run("name: demo\nlr: 0.01\nmomentum_decay: 0.5\nchunk: 4\ntopk: 1\n");
  bool uses_both_workers = false, residual_matters = false;
  for (size_t i = 0; i < shapes.size(); ++i) {
    torch::Tensor expected = start[i].add(means[0][i].sign(), -0.01).add(means[1][i].sign(), -0.01);
    CHECK(torch::equal(whole[i], expected));
    uses_both_workers = uses_both_workers || !torch::equal(means[0][i].sign(), grads[0][0][i].sign());
    residual_matters = residual_matters || !torch::equal((0.5 * means[0][i] + means[1][i]).sign(), means[1][i].sign());
  }
  CHECK(uses_both_workers);  // the steps used both workers' gradients, not one
  CHECK(residual_matters);   // a policy that kept what it sent in δ would fail the equality above
  CHECK(max_abs_diff(sparse, whole) > 0);  // and with k = 1 it is not that step
}

TEST_CASE("demo: demo.py's wire (indices: int64, values: fp32) sends chunks times k times (8 + 4) bytes a step") {
  torch::set_num_threads(1);
  // bloc97/DeMo's demo.py all-gathers, per parameter, torch.topk's int64 indices and the values in the
  // parameter's dtype (fp32 here), k clamped to the chunk. Its chunking (TransformDCT: the largest
  // divisor of each extent <= s, the extent itself when none reaches s) equals locosim's for these
  // shapes, s = 64, k = 32:
  //   {192}:      192 = 3·64           3 chunks of 64           3·32·12 = 1152
  //   {16}:       divisors of 16 < 64  1 chunk of 16, k' = 16   16·12   =  192
  //   {128, 192}: 2 × 3 blocks 64×64   6 chunks of 4096         6·32·12 = 2304
  //   {48, 64}:   48 × 64              1 chunk of 3072          32·12   =  384
  //   {8, 4}:     8 × 4                1 chunk of 32, k' = 32   32·12   =  384
  const std::vector<std::vector<int64_t>> shapes = {{192}, {16}, {128, 192}, {48, 64}, {8, 4}};
  const double by_hand = 1152 + 192 + 2304 + 384 + 384;
  const std::string yaml = "name: demo\nindices: int64\nvalues: fp32\n";
  CHECK(demo_payload_bytes(std::any_cast<const DemoConfig&>(spec_from(yaml).config), shapes) == by_hand);
  torch::manual_seed(12);
  std::vector<torch::Tensor> params;
  for (const auto& shape : shapes) params.push_back(torch::randn(shape).requires_grad_(true));
  OneWorker transport;
  OptimizerConfig opt;
  PolicyContext ctx{params, &transport, opt, 10, 1.0};
  auto policy = make_policy(spec_from(yaml), ctx);
  for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
  policy->step(0);
  REQUIRE(transport.charged_bytes.size() == 1);
  CHECK(transport.charged_bytes[0] == by_hand);
  CHECK(transport.carried_bytes[0] == by_hand);  // the payload's tensors weigh exactly that
  // The packed default sends the same coefficients in fewer bytes: uint8/uint16 positions, none for
  // the two whole tensors, fp16 values.
  CHECK(demo_payload_bytes(DemoConfig{}, shapes) == 3 * 32 * 3 + 16 * 2 + 6 * 32 * 4 + 32 * 4 + 32 * 2);
}

TEST_CASE("demo: the index format changes the bytes, never the parameters") {
  // Two workers, three steps, tensors with sparse and whole chunks (s 4, k 3: {3} fits in k).
  const std::vector<std::vector<int64_t>> shapes = {{8}, {5, 6}, {3}};
  torch::manual_seed(13);
  std::vector<torch::Tensor> start;
  std::vector<std::vector<std::vector<torch::Tensor>>> grads(3, std::vector<std::vector<torch::Tensor>>(2));
  for (const auto& shape : shapes) {
    start.push_back(torch::randn(shape));
    for (auto& step : grads) {
      for (auto& rank : step) rank.push_back(torch::randn(shape));
    }
  }
  auto run = [&](const std::string& yaml) { return run_two_workers(yaml, start, grads)[0]; };
  for (const char* values : {"fp32", "fp16", "sign"}) {
    CAPTURE(values);
    const std::string yaml = std::string("name: demo\nlr: 0.01\nchunk: 4\ntopk: 3\nvalues: ") + values + "\n";
    std::vector<torch::Tensor> packed = run(yaml + "indices: packed\n");
    std::vector<torch::Tensor> wide = run(yaml + "indices: int64\n");
    CHECK(max_abs_diff(packed, wide) == 0);
    CHECK(max_abs_diff(packed, start) > 0);  // the parameters moved
    DemoConfig a = std::any_cast<const DemoConfig&>(spec_from(yaml).config);
    DemoConfig b = std::any_cast<const DemoConfig&>(spec_from(yaml + "indices: int64\n").config);
    CHECK(demo_payload_bytes(b, shapes) > demo_payload_bytes(a, shapes));
  }
}

TEST_CASE("demo: the DisTrO report's 1.2B model, 32 nodes: bytes per worker per step") {
  std::vector<std::vector<int64_t>> shapes = distro_1p2b_shapes();
  int64_t params = 0;
  for (const auto& s : shapes) params += s.size() == 1 ? s[0] : s[0] * s[1];
  CHECK(params == 1'204'881'408);  // 2.41 GB in bf16, as the report's all-reduce row
  // DeMo's defaults (k 32 per 64×64 block, uint16 + fp16): 294,144 blocks · 32 · 4 B
  // + 33 norms · 32 chunks · 32 · (1 + 2) B.
  DemoConfig paper;
  CHECK(demo_payload_bytes(paper, shapes) == 294144.0 * 32 * 4 + 1056.0 * 32 * 3);
  CHECK(demo_payload_bytes(paper, shapes) == 37'751'808);
  // demo.py's own wire (int64 indices, fp32 values): (294,144 + 1,056) chunks · 32 · 12 B.
  DemoConfig reference;
  reference.indices = SparseIndices::int64;
  reference.values = SparseValues::fp32;
  CHECK(demo_payload_bytes(reference, shapes) == (294144.0 + 1056.0) * 32 * 12);
  CHECK(demo_payload_bytes(reference, shapes) == 113'356'800);
  // Psyche's settings (k 4, 1-bit signs): 2.51 MB, near the report's 2.8 MB uploaded per node per step
  // (× 31 peers = 86.8 MB).
  DemoConfig psyche;
  psyche.topk = 4;
  psyche.values = SparseValues::sign;
  const double blocks = 294144.0 * 4 * 2 + 294144.0 * 4 / 8;  // positions + sign bits, 2-D
  const double norms = 1056.0 * 4 * 1 + 1056.0 * 4 / 8;       // positions + sign bits, 1-D
  CHECK(demo_payload_bytes(psyche, shapes) == blocks + norms + 4.0 * shapes.size());
  CHECK(demo_payload_bytes(psyche, shapes) == 2'505'564);
}

TEST_CASE("demo: the loss falls on the test corpus") {
  OptimizerConfig opt;  // DeMo uses its warmup/cosine shape and clip norm only
  opt.lr = 3e-3;
  opt.warmup_steps = 5;
  for (const char* yaml : {"name: demo\nlr: 3.0e-3\n", "name: demo\nlr: 3.0e-3\nvalues: sign\n"}) {
    CAPTURE(yaml);
    Outcome o = train(spec_from(yaml), 2, 60, opt);
    // Measured: 5.60 → 2.63 (fp16), 2.85 (sign); 3.11 and 3.00 if δ kept what it sent.
    CHECK(o.eval_loss_end < o.eval_loss_start - 2.0);
  }
}
