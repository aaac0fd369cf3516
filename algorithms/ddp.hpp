// DDP: all-reduce the gradients every step, then the inner optimizer. The baseline.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

struct DdpConfig {
  WireFormat wire = WireFormat::fp32;  // format of the gradients on the wire
  // PyTorch DDP's reducer: gradients are grouped into buckets in reverse parameter order (the order
  // the backward pass produces them), and each bucket's all-reduce starts as soon as its gradients
  // are ready, overlapping the rest of the backward pass. false: one all-reduce after the backward.
  bool overlap = true;
  double bucket_mb = 25;       // bucket_cap_mb: MiB of parameters per bucket (PyTorch's default)
  double first_bucket_mb = 1;  // the first bucket's cap (PyTorch's _DEFAULT_FIRST_BUCKET_BYTES, 1 MiB)

  static DdpConfig parse(Section& s);
};

std::unique_ptr<Policy> make_ddp(const DdpConfig& cfg, PolicyContext ctx);

// Its registry entry (algorithms/policy_registry.hpp).
struct PolicyEntry;
PolicyEntry ddp_policy();

// PyTorch's bucket assignment (compute_bucket_assignment_by_size): parameters in reverse order, each
// added to the open bucket, which closes once it holds at least its cap (the first bucket's cap, then
// bucket_mb's). `bytes[i]` is parameter i's size as priced (fp32 bytes × Wire::scale). Returns the
// buckets in the order they become ready, each a list of parameter indices.
std::vector<std::vector<size_t>> ddp_buckets(const std::vector<double>& bytes, const DdpConfig& cfg);

}  // namespace locosim
