// DDP timed as PyTorch DDP runs: gradient buckets whose all-reduces start during the backward pass.
// The expected wall-clock comes from the bucket schedule (each bucket ready after its share of the
// backward, all-reduces one after another on the link), not from a run.
#include <algorithm>
#include <regex>
#include <sstream>

#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim::testing;

namespace {

constexpr int kSteps = 4;
constexpr double kBandwidthBps = 1e9 / 8;  // 1 Gbps up and down
constexpr double kRingLatencyS = 2 * 2e-3;  // K = 2: two rounds, each over an uplink and a downlink of 1 ms

std::vector<EventRow> worker0_events(const std::string& csv) {
  std::vector<EventRow> out;
  for (const EventRow& e : event_rows(csv)) {
    if (e.worker == 0) out.push_back(e);
  }
  return out;
}

}  // namespace

TEST_CASE("ddp: bucketed all-reduces overlap the backward pass and save what the bucket schedule predicts") {
  const std::string dir = scratch_dir("ddp-overlap");
  write_corpus(dir + "/corpus.txt", 30000);
  // Compute and communication comparable: about 1 s of compute and 3.2 s of all-reduce per step.
  write_file(dir + "/s.yaml",
             "name: overlap\n"
             "seed: 1\n"
             "platform:\n"
             "  accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.4}}\n"
             "  hosts:\n"
             "    - {name: w, accelerator: gpu, count: 2, uplink: {bandwidth: 1 Gbps, latency: 1 ms},"
             " downlink: {bandwidth: 1 Gbps, latency: 1 ms}}\n"
             "network: {all_reduce: ring}\n"
             "data: {path: corpus.txt, eval_fraction: 0.1}\n"
             "model: {preset: tiny, d_model: 32, n_layers: 2, n_heads: 2, seq_len: 16}\n"
             "train: {steps: 4, batch_size: 4, eval_every: 4, eval_batches: 1}\n"
             "timing: {params: 100.0e6, tokens_per_step: 65536}\n"
             "policies:\n"
             "  - {name: ddp, label: overlap}\n"
             "  - {name: ddp, label: serial, overlap: false}\n");
  CliResult r = run_locosim("run s.yaml -o runs", dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string runs = dir + "/runs/overlap/";
  const std::string overlap_json = read_file(runs + "overlap/summary.json");
  const std::string serial_json = read_file(runs + "serial/summary.json");
  // The buckets change the timing only: the same losses and parameters.
  CHECK(json_number(overlap_json, "final_eval_loss") == json_number(serial_json, "final_eval_loss"));
  CHECK(overlap_json.find(serial_json.substr(serial_json.find("\"params_fingerprint\""), 40)) != std::string::npos);

  // Step 1 of worker 0: the forward pass, one compute span per bucket, each followed by the start of
  // that bucket's all-reduce, then the wait for what is still in flight.
  const std::vector<EventRow> events = worker0_events(read_file(runs + "overlap/events.csv"));
  std::vector<double> compute;
  double first_send_s = -1, sent = 0;
  for (const EventRow& e : events) {
    if (e.kind == "wait") break;
    if (e.kind == "compute") compute.push_back(e.end_s - e.start_s);
    if (e.kind == "send" && first_send_s < 0) first_send_s = e.start_s;
  }
  for (const EventRow& e : events) sent += e.kind == "send" ? e.bytes : 0;
  sent /= kSteps;
  const size_t buckets = compute.size() - 1;
  REQUIRE(buckets >= 3);
  const double forward = compute[0];
  double backward = 0;
  for (size_t b = 1; b < compute.size(); ++b) backward += compute[b];
  CHECK(backward == doctest::Approx(2 * forward).epsilon(1e-6));  // 4N against 2N FLOPs per token
  CHECK(first_send_s == doctest::Approx(forward + compute[1]).epsilon(1e-9));  // the first bucket: after its share
  CHECK(first_send_s < forward + backward);                                    // overlap: before the backward ends

  // The schedule: bucket b is ready at forward + its share of the backward; its all-reduce moves its
  // share of the step's bytes and starts when it is ready and the previous one is done.
  double ready = forward, done = 0;
  for (size_t b = 1; b < compute.size(); ++b) {
    ready += compute[b];
    done = std::max(done, ready) + sent * (compute[b] / backward) / kBandwidthBps + kRingLatencyS;
  }
  const double serial_step = forward + backward + sent / kBandwidthBps + kRingLatencyS;
  const double overlap_wall = json_number(overlap_json, "wall_clock_s");
  const double serial_wall = json_number(serial_json, "wall_clock_s");
  CHECK(serial_wall == doctest::Approx(kSteps * serial_step).epsilon(0.002));
  // The links carry the buckets side by side rather than one after another: only the latency terms
  // differ from the queue above.
  CHECK(overlap_wall == doctest::Approx(kSteps * done).epsilon(0.02));
  CHECK(overlap_wall < serial_wall);
  CHECK(serial_wall / overlap_wall == doctest::Approx(serial_step / done).epsilon(0.02));
}
