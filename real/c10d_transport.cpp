// C10dTransport: collectives on c10d, numerics shared with the simulator (mean_in_rank_order).
#include "real/c10d_transport.hpp"

#include <torch/utils.h>

namespace locosim {
namespace {

// One flat tensor of all xs (so one collective carries a policy's whole payload).
torch::Tensor flatten(const std::vector<torch::Tensor>& xs) {
  std::vector<torch::Tensor> flat;
  for (const auto& x : xs) flat.push_back(x.detach().reshape({-1}));
  return torch::cat(flat);
}

std::vector<torch::Tensor> unflatten(const torch::Tensor& flat, const std::vector<torch::Tensor>& like) {
  std::vector<torch::Tensor> out;
  int64_t offset = 0;
  for (const auto& x : like) {
    out.push_back(flat.slice(0, offset, offset + x.numel()).view(x.sizes()));
    offset += x.numel();
  }
  return out;
}

torch::Dtype wire_dtype(WireFormat format) {
  switch (format) {
    case WireFormat::fp16: return torch::kFloat16;
    case WireFormat::bf16: return torch::kBFloat16;
    default: return torch::kFloat32;
  }
}

}  // namespace

C10dTransport::C10dTransport(c10::intrusive_ptr<c10d::ProcessGroup> group, ReduceMode mode, Recorder& recorder)
    : group_(std::move(group)), mode_(mode), recorder_(recorder), start_(std::chrono::steady_clock::now()) {}

double C10dTransport::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void C10dTransport::compute(double, const std::function<void()>& work) {
  const double start = now_s();
  work();
  recorder_.event({rank(), EventKind::compute, start, now_s(), 0, -1});
}

void C10dTransport::wait_for(const c10::intrusive_ptr<c10d::Work>& work, double sent_bytes, double recv_bytes) {
  const double start = now_s();
  work->wait();  // throws on timeout or a lost peer (Gloo's own message)
  const double end = now_s();
  recorder_.event({rank(), EventKind::wait, start, end, 0, -1});
  // The backend does not report per-peer flows: the traffic is recorded once, against no peer.
  recorder_.event({rank(), EventKind::send, start, end, sent_bytes, -1});
  recorder_.event({rank(), EventKind::recv, start, end, recv_bytes, -1});
}

Pending C10dTransport::all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) {
  const int world = world_size();
  const double payload_bytes = wire_bytes(xs, w.format) * w.scale;
  if (mode_ == ReduceMode::native) {
    std::vector<at::Tensor> buffer = {flatten(xs).to(wire_dtype(w.format))};
    auto work = group_->allreduce(buffer);
    const double ring_bytes = 2.0 * (world - 1) / world * payload_bytes;
    return Pending([this, work, buffer, &xs, ring_bytes, world] {
      wait_for(work, ring_bytes, ring_bytes);
      torch::Tensor mean = buffer[0].to(torch::kFloat32).div_(static_cast<double>(world));
      auto parts = unflatten(mean, xs);
      for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(parts[i]);
      return true;  // a lost peer throws (the group cannot be re-formed yet)
    });
  }
  std::vector<torch::Tensor> rounded;
  for (const auto& x : xs) rounded.push_back(through_wire(x.detach(), w.format));
  std::vector<at::Tensor> mine = {flatten(rounded)};
  std::vector<std::vector<at::Tensor>> all(1);
  for (int r = 0; r < world; ++r) all[0].push_back(torch::empty_like(mine[0]));
  auto work = group_->allgather(all, mine);
  const double gather_bytes = (world - 1) * payload_bytes;
  return Pending([this, work, all, &xs, format = w.format, gather_bytes] {
    wait_for(work, gather_bytes, gather_bytes);
    std::vector<std::vector<torch::Tensor>> contributions;
    for (const auto& flat : all[0]) contributions.push_back(unflatten(flat, xs));
    auto mean = mean_in_rank_order(contributions, format);
    for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(mean[i]);
    return true;
  });
}

Pending C10dTransport::all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                                  std::vector<std::vector<torch::Tensor>>& out) {
  // One c10d all-gather per tensor (payloads mix dtypes: indices and values).
  const int world = world_size();
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  auto gathered = std::make_shared<std::vector<std::vector<std::vector<at::Tensor>>>>();
  for (const auto& x : mine) {
    std::vector<at::Tensor> input = {x.detach().contiguous()};
    std::vector<std::vector<at::Tensor>> output(1);
    for (int r = 0; r < world; ++r) output[0].push_back(torch::empty_like(input[0]));
    // Gloo divides by the element count: an empty tensor (the same on every rank) stays local.
    if (input[0].numel() > 0) works.push_back(group_->allgather(output, input));
    gathered->push_back(std::move(output));
  }
  return Pending([this, works, gathered, &out, world, bytes] {
    for (size_t i = 0; i < works.size(); ++i) {
      // The payload's bytes are charged once, on the first tensor's wait.
      wait_for(works[i], i == 0 ? (world - 1) * bytes : 0, i == 0 ? (world - 1) * bytes : 0);
    }
    out.assign(world, {});
    for (const auto& per_tensor : *gathered) {
      for (int r = 0; r < world; ++r) out[r].push_back(per_tensor[0][r]);
    }
    return true;
  });
}

}  // namespace locosim
