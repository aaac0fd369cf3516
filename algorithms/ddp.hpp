// DDP: all-reduce the gradients every step, then the inner optimizer. The baseline.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/policy_registry.hpp"
#include "algorithms/train_config.hpp"
#include "algorithms/wire_format.hpp"
#include "config/section.hpp"

namespace locosim {

class Policy;
struct PolicyContext;

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

// PyTorch's bucket assignment (compute_bucket_assignment_by_size): parameters in reverse order, each
// added to the open bucket, which closes once it holds at least its cap (the first bucket's cap, then
// bucket_mb's). `bytes[i]` is parameter i's size as priced (fp32 bytes × Wire::scale). Returns the
// buckets in the order they become ready, each a list of parameter indices.
std::vector<std::vector<size_t>> ddp_buckets(const std::vector<double>& bytes, const DdpConfig& cfg);

// Its keys in a scenario's policies: entry, each checked; absent keys keep the defaults above.
inline DdpConfig DdpConfig::parse(Section& s) {
  DdpConfig c;
  c.wire = wire_format_from_name(s.choice("wire", wire_format_names(), wire_format_name(c.wire)));
  c.overlap = s.flag("overlap", c.overlap);
  c.bucket_mb = s.number("bucket_mb", c.bucket_mb, Range::open_closed(0, 1e6));
  c.first_bucket_mb = s.number("first_bucket_mb", c.first_bucket_mb, Range::open_closed(0, 1e6));
  return c;
}

// Its registry entry (policy_registry.hpp), listed in policy_list.hpp.
inline PolicyEntry ddp_policy() {
  return policy_entry<DdpConfig>({
      .name = "ddp",
      .paper = "PyTorch DDP, arXiv 2006.15704",
      .sync_period = [](const DdpConfig&) -> std::optional<SyncPeriod> { return std::nullopt; },
      .reads_clock = [](const DdpConfig&) { return false; },
      .collective = [](const DdpConfig&) { return RoundCollective::all_reduce; },
      .handover = "after any committed or aborted step: the parameters and the inner optimizer",
      .on_failed_collective = "redo the all-reduce among the survivors, up to 3 attempts; then the step is aborted "
                              "and its gradients thrown away",
      .bytes_per_round = "2(K−1)/K · P · b, every step",
      .example = "{name: ddp, wire: fp16}",
  });
}

}  // namespace locosim
