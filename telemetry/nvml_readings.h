// Reads one NVML device's fields into a GpuSample, each through the newest entry point the driver
// has and its fallback. A missing entry point, an error or an implausible ("blank") value leaves
// the field nullopt. Used only by the NVML sampler, which serializes the calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/gpu_sample.h"
#include "telemetry/nvml_api.h"

namespace trainyard::telemetry::nvml {

struct MemoryReading {
  uint64_t total = 0;
  uint64_t used = 0;  // allocated; includes reserved memory only on drivers without _v2
};
// Memory through nvmlDeviceGetMemoryInfo_v2, else v1.
std::optional<MemoryReading> read_memory(const Api& api, Device device);
// "00000000:18:00.0", or empty when the driver cannot say.
std::string read_pci_bus_id(const Api& api, Device device);
// Whole-GPU readings (not for MIG devices, where NVML does not report them): utilization,
// temperature and its slowdown threshold, power, clocks, throttle reasons, volatile ECC.
void read_gpu_fields(const Api& api, Device device, GpuSample& out);
// PCIe throughput through nvmlDeviceGetPcieThroughput, which samples each direction over 20 ms
// and so blocks ~21 ms per call (measured on an H100, driver 580); drivers with PCIe byte
// counters give the rate without it (nvml_interval.cc).
void read_pcie_throughput(const Api& api, Device device, GpuSample& out);
// Whole-GPU health fields that cost microseconds (nvml_counters.cc): remapped rows, memory
// temperature.
void read_counter_fields(const Api& api, Device device, GpuSample& out);
// Whole-GPU counters since the driver loaded that cost the driver milliseconds per read (on an
// H100, driver 580: energy 3.3 ms of CPU, each of the six violation policies 0.8 ms): energy,
// PCIe replays, violation times. Each where the driver has its entry point.
void read_costly_counters(const Api& api, Device device, GpuSample& out);
// Bytes sent and received since the driver loaded, from a pair of field-value counters.
struct ByteCounters {
  uint64_t tx_bytes = 0;
  uint64_t rx_bytes = 0;
};
// NVLink data (without protocol overhead), summed over all links; nullopt when the GPU or driver
// has no NVLink counters.
std::optional<ByteCounters> read_nvlink_counters(const Api& api, Device device);
// PCIe traffic (newer drivers); nullopt when the GPU or driver does not count it.
std::optional<ByteCounters> read_pcie_counters(const Api& api, Device device);
// The compute processes on the device with the memory each holds; empty when unsupported.
std::vector<GpuProcessSample> read_processes(const Api& api, Device device);
// Sets each process's SM utilization from the samples newer than `last_seen_us` (advanced to the
// newest one read). A process with no new sample computed nothing: 0%. Leaves the processes
// untouched when the driver does not support per-process utilization.
void read_process_utilization(const Api& api, Device device, uint64_t& last_seen_us,
                              std::vector<GpuProcessSample>& processes);

}  // namespace trainyard::telemetry::nvml
