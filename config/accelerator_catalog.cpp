// The accelerator catalogue (see accelerator_catalog.hpp): one line per device.
//
// Peaks are the vendors' dense BF16 tensor figures for one device. Datasheets headline the 2:4
// structured-sparsity figure (twice the dense one); training uses dense matrices, so the catalogue
// holds half of it. GeForce cards run BF16 only with FP32 accumulate, which their whitepapers list at
// half the FP16-accumulate rate: that lower figure is the one here.
#include "config/accelerator_catalog.hpp"

#include <cstdio>

namespace locosim {

namespace {

// Default efficiencies (see kCatalogEfficiencySource): data-centre devices and GeForce cards.
constexpr double kDataCentreMfu = 0.4;
constexpr double kGeForceMfu = 0.35;

}  // namespace

const char* const kCatalogEfficiencySource =
    "Efficiency (MFU) defaults are a convention, not measurements of these devices: 0.4 for data-centre devices, "
    "about what large LLM trainings report (Llama 3 405B: 38-43% BF16 MFU on H100, Llama 3 paper, arXiv 2407.21783, "
    "Table 4; PaLM paper, arXiv 2204.02311, Table 3: 30.2% for Megatron-Turing NLG 530B on A100, 46.2% for PaLM on "
    "TPU v4), and 0.35 for GeForce cards (the value locosim's shipped platforms use: a little lower, as smaller "
    "batches fit in 24-32 GB). "
    "A small model trains at a lower MFU than these: measure yours with scripts/calibrate.py compute, or set "
    "efficiency.";

const std::vector<CatalogAccelerator>& accelerator_catalog() {
  static const std::vector<CatalogAccelerator> catalog = {
      {"a100", "NVIDIA A100 SXM4 80GB", "312 TFLOPS", kDataCentreMfu, "80 GB HBM2e",
       "NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS (624 with sparsity); the PCIe card lists "
       "the same peak"},
      {"h100", "NVIDIA H100 SXM5 80GB", "989 TFLOPS", kDataCentreMfu, "80 GB HBM3",
       "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: BF16 Tensor Core 1,979 TFLOPS with sparsity, so 989 dense "
       "(H100 architecture whitepaper: 989.4)"},
      {"h100-pcie", "NVIDIA H100 PCIe 80GB", "756 TFLOPS", kDataCentreMfu, "80 GB HBM2e",
       "NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe: BF16 Tensor Core 1,513 TFLOPS with sparsity, so 756 dense"},
      {"h200", "NVIDIA H200 SXM 141GB", "989 TFLOPS", kDataCentreMfu, "141 GB HBM3e",
       "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: BF16 Tensor Core 1,979 TFLOPS with sparsity, so 989 dense "
       "(the H100 SXM's compute with more, faster memory)"},
      {"b200", "NVIDIA B200 (HGX B200, 1,000 W)", "2250 TFLOPS", kDataCentreMfu, "180 GB HBM3e",
       "NVIDIA HGX B200 specifications: FP16/BF16 Tensor Core 4.5 PFLOPS per GPU with sparsity, so 2.25 dense; the "
       "B200 in a GB200 (1,200 W) lists 2.5 dense. Early figures for a new part: check NVIDIA's current datasheet"},
      {"l40s", "NVIDIA L40S 48GB", "362 TFLOPS", kDataCentreMfu, "48 GB GDDR6",
       "NVIDIA L40S datasheet: BF16 Tensor Core 362.05 TFLOPS (733 with sparsity)"},
      {"rtx3090", "NVIDIA GeForce RTX 3090", "71 TFLOPS", kGeForceMfu, "24 GB GDDR6X",
       "NVIDIA Ampere GA102 GPU architecture whitepaper, RTX 3090: peak BF16 Tensor TFLOPS with FP32 accumulate 71 "
       "(142 with sparsity)"},
      {"rtx4090", "NVIDIA GeForce RTX 4090", "165.2 TFLOPS", kGeForceMfu, "24 GB GDDR6X",
       "NVIDIA Ada GPU architecture whitepaper, RTX 4090: peak BF16 Tensor TFLOPS with FP32 accumulate 165.2 (330.4 "
       "with sparsity; FP16 accumulate doubles both)"},
      {"rtx5090", "NVIDIA GeForce RTX 5090", "209.5 TFLOPS", kGeForceMfu, "32 GB GDDR7",
       "NVIDIA RTX Blackwell GPU architecture whitepaper, RTX 5090: peak FP16/BF16 Tensor TFLOPS with FP32 accumulate "
       "209.5 (419 with sparsity). Third-party microbenchmarks report BF16 matrix throughput above this figure; the "
       "datasheet's is kept"},
      {"mi250x", "AMD Instinct MI250X", "383 TFLOPS", kDataCentreMfu, "128 GB HBM2e",
       "AMD Instinct MI250X data sheet: peak BF16 383 TFLOPS for the whole module, whose two dies PyTorch sees as two "
       "devices (give a host gpus: 1 per module)"},
      {"mi300x", "AMD Instinct MI300X", "1307.4 TFLOPS", kDataCentreMfu, "192 GB HBM3",
       "AMD Instinct MI300X data sheet: peak BF16 1,307.4 TFLOPS dense (2,614.9 with sparsity). Reported MFU on AMD's "
       "software is often lower than 0.4: set efficiency for your stack"},
  };
  return catalog;
}

const CatalogAccelerator* catalog_accelerator(const std::string& name) {
  for (const auto& a : accelerator_catalog()) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

std::vector<std::string> catalog_accelerator_names() {
  std::vector<std::string> names;
  for (const auto& a : accelerator_catalog()) names.push_back(a.name);
  return names;
}

std::string accelerator_catalog_table() {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %-14s %-10s %-13s %s\n", "name", "peak (bf16)", "efficiency", "memory",
                "device");
  out += line;
  for (const auto& a : accelerator_catalog()) {
    std::snprintf(line, sizeof line, "%-10s %-14s %-10g %-13s %s\n", a.name, a.peak, a.efficiency, a.memory, a.device);
    out += line;
  }
  out += "\nPeak: one device's dense BF16 tensor throughput (no 2:4 sparsity; FP32 accumulate on GeForce cards).\n";
  out += std::string(kCatalogEfficiencySource) + "\n";
  out += "\nSources:\n";
  for (const auto& a : accelerator_catalog()) out += "  " + std::string(a.name) + ": " + a.source + "\n";
  out += "\nA host names one as `accelerator: h100`; a platform's accelerators: map overrides an entry, whole or in "
         "part: accelerators: {h100: {efficiency: 0.5}} keeps the catalogue's peak.\n";
  return out;
}

}  // namespace locosim
