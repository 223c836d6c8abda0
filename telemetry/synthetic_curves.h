// Believable readings of a synthetic GPU: what a GPU of that model would report while running a
// job of a given profile (docs/telemetry.md, "Backends"). A pure function of the device, its load
// and the time, with jitter seeded from the device's uuid and the sample time (no global RNG), so
// equal inputs give identical samples.
#pragma once

#include <cstdint>
#include <string_view>

#include "telemetry/gpu_device.h"
#include "telemetry/gpu_sample.h"
#include "telemetry/gpu_sampler.h"

namespace trainyard::telemetry {

// Figures of a model that shape its curves. Unknown models get a generic 300 W GPU.
struct SyntheticModelSpec {
  double tdp_w = 300;
  double max_sm_clock_mhz = 1500;
  double max_mem_clock_mhz = 5000;
};
SyntheticModelSpec synthetic_model_spec(std::string_view model);

inline constexpr double kSyntheticSlowdownC = 87;

// One reading of `device` at `now_ms` while it runs `load` (nullptr: nothing). MIG devices of a
// synthetic GPU are not sampled: the synthetic sampler makes no MIG instances.
GpuSample synthesize_sample(const GpuDevice& device, const SyntheticLoad* load, int64_t now_ms);

}  // namespace trainyard::telemetry
