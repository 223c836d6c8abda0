// The accelerator catalog: GPU models with their memory, dense fp16/bf16 tensor throughput,
// memory bandwidth and interconnect, and the MIG profiles each supports with slice sizes and
// valid start positions (as `nvidia-smi mig -lgipp` lists them). Figures are vendor datasheet
// values for the SXM part where one exists; see docs/accelerators.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/quantity.h"

namespace trainyard::model {

// A GPU is cut into 8 memory slices; a profile occupies `memory_slices` contiguous slices
// starting at one of the positions set in `start_mask` (bit i = may start at slice i).
inline constexpr int kMigMemorySlices = 8;
// A GPU has 7 compute slices. A MIG instance counts as its compute slices out of 7 of a GPU
// everywhere a share is counted: quotas, billing, lost work and what the API shows.
inline constexpr int kMigComputeSlices = 7;

// Milli-GPUs a MIG instance of `compute_slices` counts as, rounded down (3 slices: 428).
constexpr int64_t mig_milli(int compute_slices) {
  return compute_slices * kMilliPerGpu / kMigComputeSlices;
}
// The same share unrounded, as a fraction of a GPU (3 slices: 0.428571...), for display.
constexpr double mig_gpu_fraction(int compute_slices) {
  return static_cast<double>(compute_slices) / kMigComputeSlices;
}

struct MigProfile {
  std::string_view name;  // "1g.10gb"
  int compute_slices;     // of kMigComputeSlices
  int memory_slices;      // of 8
  Bytes memory;
  uint8_t start_mask;
  int max_instances;
  // Occupancy bits of an instance of this profile starting at `start`.
  uint8_t slot_bits(int start) const {
    return static_cast<uint8_t>(((1u << memory_slices) - 1u) << start);
  }
};

struct Accelerator {
  std::string_view name;  // canonical, e.g. "H100-80GB"
  std::string_view vendor;
  Bytes memory;
  double fp16_tflops;     // dense tensor-core fp16/bf16 (no sparsity)
  double memory_bw_gbps;  // GB/s
  bool nvlink;
  std::span<const MigProfile> mig_profiles;  // empty if the model has no MIG

  const MigProfile* find_mig_profile(std::string_view profile) const;
};

// All catalogued accelerators, in a fixed order.
std::span<const Accelerator> accelerator_catalog();
// Looks a model up by canonical name or a common alias ("H100", "A100", "V100M16",
// "a100-sxm4-80gb"). Case-insensitive. Returns nullptr when unknown.
const Accelerator* find_accelerator(std::string_view name);
// The canonical name for `name` if catalogued, else `name` unchanged (traces name private models).
std::string canonical_accelerator_name(std::string_view name);

}  // namespace trainyard::model
