// One reading of one GPU (or one MIG device) at one moment: what the samplers produce, what the
// server keeps in its ring buffer, exports on /metrics and feeds to alerts and the doctor.
// Plain data. A field the device or driver does not report is nullopt (never a sentinel such as
// NVML's or DCGM's "blank" values, which the samplers filter out).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/clock.h"

namespace trainyard::telemetry {

// Clock-event ("throttle") reason bits, as NVML reports them.
inline constexpr uint64_t kThrottleGpuIdle = 0x1;
inline constexpr uint64_t kThrottleAppClocks = 0x2;
inline constexpr uint64_t kThrottleSwPowerCap = 0x4;
inline constexpr uint64_t kThrottleHwSlowdown = 0x8;
inline constexpr uint64_t kThrottleSyncBoost = 0x10;
inline constexpr uint64_t kThrottleSwThermal = 0x20;
inline constexpr uint64_t kThrottleHwThermal = 0x40;
inline constexpr uint64_t kThrottleHwPowerBrake = 0x80;
// Bits that mean the GPU is really slowed by heat or power (idle/app-clock/power-cap are benign).
inline constexpr uint64_t kThrottleThermalOrPower =
    kThrottleHwSlowdown | kThrottleSwThermal | kThrottleHwThermal | kThrottleHwPowerBrake;

struct GpuProcessSample {
  int pid = 0;                            // host pid
  std::optional<uint64_t> memory_bytes;   // GPU memory the process holds
  std::optional<double> sm_util_percent;  // from process utilization samples (not on MIG)
};

struct GpuSample {
  util::Time time{};  // when it was read (virtual time in tests and the simulator)
  int index = 0;      // the physical GPU's index (MIG devices: their parent's)
  std::string uuid;   // "GPU-..." or, for a MIG device, "MIG-..."
  std::string name;   // driver's name
  std::string model;  // canonical accelerator name ("H100-80GB") or the driver's name
  std::string pci_bus_id;
  std::string host;  // the machine the GPU is in (a batch system's node); empty = this one
  // MIG devices only: the GPU instance id and its profile ("1g.10gb").
  bool is_mig = false;
  std::optional<int> gpu_instance_id;
  std::string mig_profile;

  std::optional<double> gpu_util_percent;   // % of time a kernel ran (n/a on MIG)
  std::optional<double> mem_util_percent;   // memory-controller busy %
  std::optional<double> sm_active_percent;  // GPM SM activity (Hopper+), when available
  // Profiling activity (NVML GPM, Hopper and newer), in % like the fields above; /metrics
  // writes them as DCGM's 0..1 ratios.
  std::optional<double> tensor_active_percent;     // any tensor-core pipe busy
  std::optional<double> dram_active_percent;       // DRAM bandwidth used of its peak
  std::optional<double> gr_engine_active_percent;  // graphics/compute engine busy
  std::optional<uint64_t> memory_used_bytes;       // allocated (NVML v2: excludes reserved)
  std::optional<uint64_t> memory_total_bytes;
  std::optional<double> temperature_c;
  std::optional<double> slowdown_temperature_c;  // the card's own slowdown threshold
  std::optional<double> memory_temperature_c;    // HBM sensor, where the card has one
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<double> sm_clock_mhz;
  std::optional<double> mem_clock_mhz;
  std::optional<uint64_t> throttle_reasons;  // kThrottle* bits
  std::optional<uint64_t> ecc_corrected_volatile;
  std::optional<uint64_t> ecc_uncorrected_volatile;
  std::optional<uint64_t> energy_mj;          // energy used since the driver loaded, millijoules
  std::optional<uint64_t> pcie_replay_count;  // PCIe retries since the driver loaded
  // Time the clocks were held down by each cause since the driver loaded, microseconds
  // (NVML's perf-policy violation times; DCGM's *_VIOLATION fields).
  std::optional<uint64_t> violation_power_us;
  std::optional<uint64_t> violation_thermal_us;
  std::optional<uint64_t> violation_sync_boost_us;
  std::optional<uint64_t> violation_board_limit_us;
  std::optional<uint64_t> violation_low_util_us;
  std::optional<uint64_t> violation_reliability_us;
  // Row remapping (A100 and newer HBM GPUs).
  std::optional<uint64_t> remapped_rows_correctable;
  std::optional<uint64_t> remapped_rows_uncorrectable;
  std::optional<bool> row_remap_failed;
  std::optional<int> last_xid;        // last XID error seen since the sampler started
  std::optional<uint64_t> xid_count;  // XID errors seen since the sampler started
  std::optional<double> pcie_tx_bytes_per_s;
  std::optional<double> pcie_rx_bytes_per_s;
  std::optional<double> nvlink_tx_bytes_per_s;
  std::optional<double> nvlink_rx_bytes_per_s;
  std::vector<GpuProcessSample> processes;
};

}  // namespace trainyard::telemetry
