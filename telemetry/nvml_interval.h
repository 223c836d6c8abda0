// Readings of one GPU that need two samples in time: GPM profiling metrics (Hopper and newer:
// SM, tensor, DRAM and engine activity between two GPM samples), NVLink throughput (the
// change of NVLink's byte counters) and PCIe throughput (the change of PCIe's byte counters, on
// drivers that have them). Used only by the NVML sampler, whose mutex serializes the
// calls; the first sample of a GPU reports neither. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "telemetry/gpu_sample.h"
#include "telemetry/nvml_api.h"
#include "telemetry/nvml_readings.h"

namespace trainyard::telemetry::nvml {

class IntervalReadings {
 public:
  explicit IntervalReadings(const Api& api) : api_(api) {}
  ~IntervalReadings() { release(); }
  IntervalReadings(const IntervalReadings&) = delete;
  IntervalReadings& operator=(const IntervalReadings&) = delete;

  // Fills the GPM, NVLink and PCIe fields of `out` from the change since the previous call for
  // `uuid`.
  void read(Device device, const std::string& uuid, util::Time now, GpuSample& out);
  // True when the last read of `uuid` found PCIe byte counters, so its PCIe rates need no
  // nvmlDeviceGetPcieThroughput (the first read has counters but no rate yet).
  bool has_pcie_counters(const std::string& uuid) const { return pcie_.contains(uuid); }
  // Frees the GPM sample buffers; call before nvmlShutdown. Idempotent.
  void release();

 private:
  struct Gpm {
    bool supported = false;
    GpmSample previous = nullptr;
    GpmSample current = nullptr;
    std::optional<util::Time> previous_at;
  };
  struct Baseline {
    ByteCounters counters;
    util::Time at{};
  };

  Gpm* gpm_of(Device device, const std::string& uuid);
  void read_gpm(Device device, const std::string& uuid, util::Time now, GpuSample& out);
  static void rates(std::map<std::string, Baseline>& baselines, const std::string& uuid,
                    util::Time now, const std::optional<ByteCounters>& counters,
                    std::optional<double>& tx, std::optional<double>& rx);

  const Api& api_;
  std::map<std::string, Gpm> gpm_;          // GPU uuid -> its GPM buffers (checked once)
  std::map<std::string, Baseline> nvlink_;  // GPU uuid -> previous NVLink counters
  std::map<std::string, Baseline> pcie_;    // GPU uuid -> previous PCIe counters
};

}  // namespace trainyard::telemetry::nvml
