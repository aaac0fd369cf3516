// The built-in catalogue of accelerators: a host's `accelerator: h100` names one of these when the
// platform's own `accelerators:` map does not define that name. Each entry's peak is the vendor's dense
// BF16 tensor figure for one device (no 2:4 sparsity; FP32 accumulate on GeForce cards), its efficiency
// a default model FLOPs utilization (MFU) for LLM training; both are overridable in a scenario.
// `locosim accelerators` prints the table.
#pragma once
#include <string>
#include <vector>

namespace locosim {

struct CatalogAccelerator {
  const char* name;        // what `accelerator:` names: "h100"
  const char* device;      // "NVIDIA H100 SXM5 80GB"
  const char* peak;        // as a scenario writes it ("989 TFLOPS"): dense BF16 tensor peak of one device
  double efficiency;       // default MFU, in (0, 1]
  const char* memory;      // device memory, for the table only ("80 GB HBM3")
  const char* source;      // where the peak comes from (the vendor's datasheet or whitepaper)
};

// Every entry, in the order `locosim accelerators` lists them.
const std::vector<CatalogAccelerator>& accelerator_catalog();
// The entry named `name`, or nullptr.
const CatalogAccelerator* catalog_accelerator(const std::string& name);
// The names, in catalogue order.
std::vector<std::string> catalog_accelerator_names();
// Where the default efficiencies come from (one paragraph).
extern const char* const kCatalogEfficiencySource;
// What `locosim accelerators` prints: the table, then each entry's source.
std::string accelerator_catalog_table();

}  // namespace locosim
