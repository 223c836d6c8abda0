// NVML readings with units converted (mW -> W, KB/s -> B/s) and "blank" values filtered: NVML
// answers NVML_VALUE_NOT_AVAILABLE (all ones) and DCGM-backed drivers 0x7ff... blanks in fields
// they cannot measure, and both must never reach a chart or an alert.
#include "telemetry/nvml_readings.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace trainyard::telemetry::nvml {
namespace {

constexpr uint64_t kBlankFloor = 0x7ff0000000000000ull;  // DCGM blanks and NVML's all-ones
constexpr double kMaxTemperatureC = 150;                 // beyond any GPU's shutdown threshold
constexpr double kMinTemperatureC = -40;
constexpr double kMaxPowerMilliwatts = 5e6;  // a GB200 superchip draws ~2.7 kW
constexpr double kMaxClockMhz = 20000;
constexpr double kMaxPcieKilobytesPerS = 5e8;  // 512 GB/s, beyond PCIe 7 x16
constexpr double kBytesPerKilobyte = 1024;     // NVML's KB is KiB
constexpr int kProcessRetries = 4;
constexpr unsigned int kProcessSlack = 8;  // room for processes that start between two calls

std::optional<double> in_range(double value, double lo, double hi) {
  if (value < lo || value > hi) return std::nullopt;
  return value;
}

std::optional<uint64_t> not_blank(unsigned long long value) {
  if (value >= kBlankFloor) return std::nullopt;
  return static_cast<uint64_t>(value);
}

// Calls a getter of one unsigned value; nullopt when the entry point is missing or fails.
template <typename Fn, typename... Args>
std::optional<unsigned int> get_uint(Fn fn, Device device, Args... args) {
  unsigned int value = 0;
  if (!fn || fn(device, args..., &value) != kSuccess) return std::nullopt;
  return value;
}

std::optional<double> read_temperature(const Api& api, Device device) {
  if (api.get_temperature_v) {
    TemperatureV1 t{};
    t.version = kTemperatureV1Version;
    t.sensor_type = static_cast<int>(kTemperatureGpu);
    if (api.get_temperature_v(device, &t) == kSuccess) {
      return in_range(t.temperature, kMinTemperatureC, kMaxTemperatureC);
    }
  }
  auto t = get_uint(api.get_temperature, device, kTemperatureGpu);
  if (!t) return std::nullopt;
  return in_range(*t, kMinTemperatureC, kMaxTemperatureC);
}

std::optional<uint64_t> read_throttle_reasons(const Api& api, Device device) {
  unsigned long long reasons = 0;
  if (api.get_clocks_event_reasons && api.get_clocks_event_reasons(device, &reasons) == kSuccess) {
    return not_blank(reasons);
  }
  if (api.get_clocks_throttle_reasons &&
      api.get_clocks_throttle_reasons(device, &reasons) == kSuccess) {
    return not_blank(reasons);
  }
  return std::nullopt;
}

std::optional<uint64_t> read_ecc(const Api& api, Device device, unsigned int type) {
  unsigned long long count = 0;
  if (!api.get_total_ecc_errors ||
      api.get_total_ecc_errors(device, type, kEccVolatile, &count) != kSuccess) {
    return std::nullopt;
  }
  return not_blank(count);
}

std::optional<double> read_pcie(const Api& api, Device device, unsigned int counter) {
  auto kb = get_uint(api.get_pcie_throughput, device, counter);
  if (!kb || *kb > kMaxPcieKilobytesPerS) return std::nullopt;
  return *kb * kBytesPerKilobyte;
}

// The two-call protocol of the running-process getters: ask with room for what is known, and
// on INSUFFICIENT_SIZE (which sets `count` to what is needed) grow and ask again.
template <typename Info>
std::vector<GpuProcessSample> call_processes(ProcessGetter get, Device device) {
  std::vector<Info> infos;
  for (int attempt = 0; attempt < kProcessRetries; ++attempt) {
    auto count = static_cast<unsigned int>(infos.size());
    Return rc = get(device, &count, infos.empty() ? nullptr : infos.data());
    if (rc == kSuccess) {
      infos.resize(std::min<size_t>(count, infos.size()));
      std::vector<GpuProcessSample> out;
      for (const Info& info : infos) {
        out.push_back({.pid = static_cast<int>(info.pid),
                       .memory_bytes = not_blank(info.used_gpu_memory),
                       .sm_util_percent = std::nullopt});
      }
      return out;
    }
    if (rc != kInsufficientSize) return {};
    infos.resize(count + kProcessSlack);
  }
  return {};
}

}  // namespace

std::optional<MemoryReading> read_memory(const Api& api, Device device) {
  std::optional<uint64_t> total;
  std::optional<uint64_t> used;
  MemoryV2 v2{};
  v2.version = kMemoryV2Version;
  Memory v1{};
  if (api.get_memory_v2 && api.get_memory_v2(device, &v2) == kSuccess) {
    total = not_blank(v2.total);
    used = not_blank(v2.used);
  } else if (api.get_memory(device, &v1) == kSuccess) {
    total = not_blank(v1.total);
    used = not_blank(v1.used);
  }
  // A total of 0 is a unified-memory GPU whose memory NVML does not report.
  if (!total || *total == 0 || !used || *used > *total) return std::nullopt;
  return MemoryReading{.total = *total, .used = *used};
}

std::string read_pci_bus_id(const Api& api, Device device) {
  PciInfo pci{};
  bool ok = (api.get_pci_info_v3 && api.get_pci_info_v3(device, &pci) == kSuccess) ||
            (api.get_pci_info_v2 && api.get_pci_info_v2(device, &pci) == kSuccess);
  if (!ok) return "";
  pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
  return std::string(pci.bus_id);
}

void read_gpu_fields(const Api& api, Device device, GpuSample& out) {
  Utilization util{};
  if (api.get_utilization && api.get_utilization(device, &util) == kSuccess) {
    out.gpu_util_percent = in_range(util.gpu, 0, 100);
    out.mem_util_percent = in_range(util.memory, 0, 100);
  }
  out.temperature_c = read_temperature(api, device);
  if (auto t = get_uint(api.get_temperature_threshold, device, kThresholdSlowdown)) {
    out.slowdown_temperature_c = in_range(*t, 1, kMaxTemperatureC);
  }
  if (auto mw = get_uint(api.get_power_usage, device)) {
    if (auto v = in_range(*mw, 0, kMaxPowerMilliwatts)) out.power_w = *v / 1000;
  }
  if (auto mw = get_uint(api.get_enforced_power_limit, device)) {
    if (auto v = in_range(*mw, 1, kMaxPowerMilliwatts)) out.power_limit_w = *v / 1000;
  }
  if (auto mhz = get_uint(api.get_clock, device, kClockSm)) {
    out.sm_clock_mhz = in_range(*mhz, 0, kMaxClockMhz);
  }
  if (auto mhz = get_uint(api.get_clock, device, kClockMem)) {
    out.mem_clock_mhz = in_range(*mhz, 0, kMaxClockMhz);
  }
  out.throttle_reasons = read_throttle_reasons(api, device);
  out.ecc_corrected_volatile = read_ecc(api, device, kEccCorrected);
  out.ecc_uncorrected_volatile = read_ecc(api, device, kEccUncorrected);
  // NVLink and PCIe throughput come from byte counters between two samples (nvml_interval.cc).
}

void read_pcie_throughput(const Api& api, Device device, GpuSample& out) {
  out.pcie_tx_bytes_per_s = read_pcie(api, device, kPcieTx);
  out.pcie_rx_bytes_per_s = read_pcie(api, device, kPcieRx);
}

std::vector<GpuProcessSample> read_processes(const Api& api, Device device) {
  if (api.get_processes_v3) {
    return api.processes_v3_cc_layout ? call_processes<ProcessInfoCc>(api.get_processes_v3, device)
                                      : call_processes<ProcessInfoV2>(api.get_processes_v3, device);
  }
  if (api.get_processes_v2) return call_processes<ProcessInfoV2>(api.get_processes_v2, device);
  if (api.get_processes_v1) return call_processes<ProcessInfoV1>(api.get_processes_v1, device);
  return {};
}

void read_process_utilization(const Api& api, Device device, uint64_t& last_seen_us,
                              std::vector<GpuProcessSample>& processes) {
  if (!api.get_process_utilization) return;
  std::vector<ProcessUtilizationSample> samples;
  unsigned int count = 0;
  Return rc = api.get_process_utilization(device, nullptr, &count, last_seen_us);
  if (rc == kInsufficientSize) {
    samples.resize(count + kProcessSlack);
    count = static_cast<unsigned int>(samples.size());
    rc = api.get_process_utilization(device, samples.data(), &count, last_seen_us);
    samples.resize(std::min<size_t>(count, samples.size()));
  }
  // NOT_FOUND: no sample since last_seen, so no process ran a kernel.
  if (rc != kSuccess && rc != kNotFound) return;
  if (rc == kNotFound) samples.clear();
  // The newest plausible sample of each pid; samples above 100% are known to be bogus.
  std::map<unsigned int, const ProcessUtilizationSample*> newest;
  std::set<unsigned int> bogus;
  uint64_t seen = last_seen_us;
  for (const auto& s : samples) {
    if (s.time_stamp <= last_seen_us) continue;
    seen = std::max<uint64_t>(seen, s.time_stamp);
    if (s.sm_util > 100) {
      bogus.insert(s.pid);
      continue;
    }
    auto& slot = newest[s.pid];
    if (!slot || s.time_stamp > slot->time_stamp) slot = &s;
  }
  last_seen_us = seen;
  for (auto& p : processes) {
    auto pid = static_cast<unsigned int>(p.pid);
    if (auto it = newest.find(pid); it != newest.end()) {
      p.sm_util_percent = it->second->sm_util;
    } else if (!bogus.contains(pid)) {
      p.sm_util_percent = 0.0;
    }
  }
}

}  // namespace trainyard::telemetry::nvml
