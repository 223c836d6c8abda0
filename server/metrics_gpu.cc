// GPU metric families for /metrics, named, typed and labelled like NVIDIA's dcgm-exporter so that
// its dashboards (Grafana 12239) and alert rules work unchanged. A value the sampler did not
// report is left out, never written as zero.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "server/metrics.h"

namespace trainyard::server {
namespace {

using telemetry::GpuSample;

constexpr double kMiB = 1024.0 * 1024.0;

std::optional<double> mib(std::optional<uint64_t> bytes) {
  if (!bytes) return std::nullopt;
  return static_cast<double>(*bytes) / kMiB;
}

std::optional<double> num(std::optional<uint64_t> v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

// DCGM's profiling fields are 0..1 ratios; the samples keep percentages.
std::optional<double> ratio(std::optional<double> percent) {
  if (!percent) return std::nullopt;
  return *percent / 100.0;
}

// DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL as DCGM computes it: the KiB/s of NVLink data sent and
// received over all links, divided by 1000 (so roughly MB/s), a rate despite its counter type.
std::optional<double> nvlink_bandwidth_total(const GpuSample& s) {
  if (!s.nvlink_tx_bytes_per_s || !s.nvlink_rx_bytes_per_s) return std::nullopt;
  return (*s.nvlink_tx_bytes_per_s + *s.nvlink_rx_bytes_per_s) / 1024.0 / 1000.0;
}

struct GpuFamily {
  const char* name;
  const char* type;
  const char* help;
  std::optional<double> (*value)(const GpuSample&);
};

// Help texts and types follow dcgm-exporter's default-counters.csv; units are MiB, MHz, W, C,
// %, mJ and us.
constexpr GpuFamily kGpuFamilies[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).",
     [](const GpuSample& s) { return s.sm_clock_mhz; }},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).",
     [](const GpuSample& s) { return s.mem_clock_mhz; }},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).",
     [](const GpuSample& s) { return s.temperature_c; }},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).",
     [](const GpuSample& s) { return s.power_w; }},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power management limit (in W).",
     [](const GpuSample& s) { return s.power_limit_w; }},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).",
     [](const GpuSample& s) { return s.gpu_util_percent; }},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).",
     [](const GpuSample& s) { return s.mem_util_percent; }},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
     [](const GpuSample& s) -> std::optional<double> {
       if (!s.memory_total_bytes || !s.memory_used_bytes) return std::nullopt;
       const uint64_t used = std::min(*s.memory_used_bytes, *s.memory_total_bytes);
       return mib(*s.memory_total_bytes - used);
     }},
    {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
     [](const GpuSample& s) { return mib(s.memory_used_bytes); }},
    {"DCGM_FI_DEV_FB_TOTAL", "gauge", "Framebuffer memory total (in MiB).",
     [](const GpuSample& s) { return mib(s.memory_total_bytes); }},
    // 0 when the sampler watches XIDs and saw none, as dcgm-exporter writes it, so a dashboard
    // tells a healthy GPU from one whose XIDs are not watched (absent).
    {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.",
     [](const GpuSample& s) -> std::optional<double> {
       if (s.last_xid) return static_cast<double>(*s.last_xid);
       if (s.xid_count) return 0.0;
       return std::nullopt;
     }},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
     [](const GpuSample& s) { return num(s.ecc_corrected_volatile); }},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
     [](const GpuSample& s) { return num(s.ecc_uncorrected_volatile); }},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge",
     "Current clock throttle reasons (bitmask of NVML's clocks-event reasons).",
     [](const GpuSample& s) { return num(s.throttle_reasons); }},
    // Not among dcgm-exporter's defaults, but its DCGM name: alert rules compare GPU_TEMP to it.
    {"DCGM_FI_DEV_SLOWDOWN_TEMP", "gauge", "Slowdown temperature threshold (in C).",
     [](const GpuSample& s) { return s.slowdown_temperature_c; }},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).",
     [](const GpuSample& s) { return s.memory_temperature_c; }},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).",
     [](const GpuSample& s) { return num(s.energy_mj); }},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.",
     [](const GpuSample& s) { return num(s.pcie_replay_count); }},
    {"DCGM_FI_DEV_POWER_VIOLATION", "counter",
     "Throttling duration due to power constraints (in us).",
     [](const GpuSample& s) { return num(s.violation_power_us); }},
    {"DCGM_FI_DEV_THERMAL_VIOLATION", "counter",
     "Throttling duration due to thermal constraints (in us).",
     [](const GpuSample& s) { return num(s.violation_thermal_us); }},
    {"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "counter",
     "Throttling duration due to sync-boost constraints (in us).",
     [](const GpuSample& s) { return num(s.violation_sync_boost_us); }},
    {"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "counter",
     "Throttling duration due to board limit constraints (in us).",
     [](const GpuSample& s) { return num(s.violation_board_limit_us); }},
    {"DCGM_FI_DEV_LOW_UTIL_VIOLATION", "counter",
     "Throttling duration due to low utilization (in us).",
     [](const GpuSample& s) { return num(s.violation_low_util_us); }},
    {"DCGM_FI_DEV_RELIABILITY_VIOLATION", "counter",
     "Throttling duration due to reliability constraints (in us).",
     [](const GpuSample& s) { return num(s.violation_reliability_us); }},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors",
     [](const GpuSample& s) { return num(s.remapped_rows_uncorrectable); }},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for correctable errors",
     [](const GpuSample& s) { return num(s.remapped_rows_correctable); }},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed",
     [](const GpuSample& s) -> std::optional<double> {
       if (!s.row_remap_failed) return std::nullopt;
       return *s.row_remap_failed ? 1.0 : 0.0;
     }},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
     "Total number of NVLink bandwidth counters for all lanes", nvlink_bandwidth_total},
    // Profiling fields are ratios (0..1) in DCGM, not percentages, whatever their help says.
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
     "Ratio of time the graphics engine is active (in %).",
     [](const GpuSample& s) { return ratio(s.gr_engine_active_percent); }},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
     "Ratio of cycles the tensor (HMMA) pipe is active (in %).",
     [](const GpuSample& s) { return ratio(s.tensor_active_percent); }},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data (in %).",
     [](const GpuSample& s) { return ratio(s.dram_active_percent); }},
    {"DCGM_FI_PROF_SM_ACTIVE", "gauge",
     "The ratio of cycles an SM has at least 1 warp assigned (in %).",
     [](const GpuSample& s) { return ratio(s.sm_active_percent); }},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
     "The rate of data transmitted over the PCIe bus, including protocol headers and data "
     "payloads (in bytes per second).",
     [](const GpuSample& s) { return s.pcie_tx_bytes_per_s; }},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
     "The rate of data received over the PCIe bus, including protocol headers and data "
     "payloads (in bytes per second).",
     [](const GpuSample& s) { return s.pcie_rx_bytes_per_s; }},
    {"DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge",
     "The rate of data transmitted over NVLink, not including protocol headers (in bytes per "
     "second).",
     [](const GpuSample& s) { return s.nvlink_tx_bytes_per_s; }},
    {"DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge",
     "The rate of data received over NVLink, not including protocol headers (in bytes per "
     "second).",
     [](const GpuSample& s) { return s.nvlink_rx_bytes_per_s; }},
};

// dcgm-exporter's labels. A MIG device is reported under its parent GPU's UUID with GPU_I_ID and
// GPU_I_PROFILE, as dcgm-exporter does. `Hostname` and `hostname` are both written: exporters
// renamed the first to the second, and existing dashboards and rules still use `Hostname`.
MetricLabels device_labels(const AttributedSample& a, const std::vector<AttributedSample>& all,
                           const std::string& hostname) {
  const GpuSample& s = a.sample;
  std::string uuid = s.uuid;
  if (s.is_mig) {
    for (const auto& p : all)
      if (!p.sample.is_mig && p.sample.index == s.index) uuid = p.sample.uuid;
  }
  MetricLabels l = {{"gpu", std::to_string(s.index)},
                    {"UUID", uuid},
                    {"pci_bus_id", s.pci_bus_id},
                    {"device", fmt::format("nvidia{}", s.index)},
                    {"modelName", s.name}};
  if (s.is_mig) {
    l.emplace_back("GPU_I_PROFILE", s.mig_profile);
    if (s.gpu_instance_id) l.emplace_back("GPU_I_ID", std::to_string(*s.gpu_instance_id));
  }
  const std::string& host = s.host.empty() ? hostname : s.host;
  l.emplace_back("Hostname", host);
  l.emplace_back("hostname", host);
  return l;
}

}  // namespace

void write_gpu_metrics(ExpositionWriter& w, const std::vector<AttributedSample>& samples,
                       const std::string& hostname) {
  std::vector<MetricLabels> labels;
  for (const auto& a : samples) labels.push_back(device_labels(a, samples, hostname));
  for (const GpuFamily& f : kGpuFamilies) {
    bool introduced = false;
    for (size_t i = 0; i < samples.size(); ++i) {
      const std::optional<double> v = f.value(samples[i].sample);
      if (!v) continue;
      if (!introduced) w.family(f.name, f.type, f.help);
      introduced = true;
      if (samples[i].jobs.empty()) {
        w.sample(f.name, labels[i], *v);
        continue;
      }
      // `job` is Prometheus's own label (the scrape job), so the job goes in hpc_job, the name
      // dcgm-exporter uses for HPC job mapping.
      for (const auto& j : samples[i].jobs) {
        MetricLabels l = labels[i];
        l.emplace_back("hpc_job", std::to_string(j.id));
        l.emplace_back("team", j.team);
        w.sample(f.name, l, *v);
      }
    }
  }
}

}  // namespace trainyard::server
