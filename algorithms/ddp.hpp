// DDP: all-reduce the gradients every step, then the inner optimizer. The baseline.
#pragma once
#include <memory>

#include "algorithms/policy.hpp"

namespace locosim {

class Section;

struct DdpConfig {
  WireFormat wire = WireFormat::fp32;  // format of the gradients on the wire

  static DdpConfig parse(Section& s);
};

std::unique_ptr<Policy> make_ddp(const DdpConfig& cfg, PolicyContext ctx);

}  // namespace locosim
