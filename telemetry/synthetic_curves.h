// Believable readings of a synthetic GPU: what a GPU of that model would report while running a
// job of a given profile (docs/telemetry.md, "Backends"). A pure function of the device, its load
// and the time, with jitter seeded from the device's uuid and the sample time (no global RNG), so
// equal inputs give identical samples.
#pragma once

#include <cstdint>
#include <optional>
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
  bool hbm = false;     // HBM memory: a memory temperature sensor and (A100+) row remapping
  bool nvlink = false;  // SXM boards on NVLink
  bool gpm = false;     // profiling metrics through NVML GPM (Hopper and newer)
};
SyntheticModelSpec synthetic_model_spec(std::string_view model);

inline constexpr double kSyntheticSlowdownC = 87;

// One reading of `device` at `now` while it runs `load` (nullptr: nothing). MIG devices of a
// synthetic GPU are not sampled: the synthetic sampler makes no MIG instances. Counters since
// the driver loaded (energy, violation times) are left to SyntheticCounters.
GpuSample synthesize_sample(const GpuDevice& device, const SyntheticLoad* load, util::Time now);

// The counters of one synthetic GPU since the sampler started: energy integrates power, and
// violation times add up the time throttle reasons were set. Not thread-safe (the sampler's
// mutex guards it).
class SyntheticCounters {
 public:
  // Advances by the time since the previous sample (the first, and one going back in time,
  // add nothing) and writes the totals into `s`.
  void add(GpuSample& s);

 private:
  std::optional<int64_t> last_ms_;
  std::optional<GpuSample> last_;
  double energy_mj_ = 0;
  double power_us_ = 0, thermal_us_ = 0, low_util_us_ = 0;
};

}  // namespace trainyard::telemetry
