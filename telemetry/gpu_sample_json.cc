#include "telemetry/gpu_sample_json.h"

#include <fmt/format.h>

namespace trainyard::telemetry {
namespace {

using nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

template <typename T>
void read_opt(const json& j, const char* key, std::optional<T>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  out = it->get<T>();
}

}  // namespace

json sample_to_json(const GpuSample& s) {
  json procs = json::array();
  for (const auto& p : s.processes)
    procs.push_back({{"pid", p.pid},
                     {"memory_bytes", opt(p.memory_bytes)},
                     {"sm_util", opt(p.sm_util_percent)}});
  return {{"time_ms", util::to_millis(s.time)},
          {"index", s.index},
          {"uuid", s.uuid},
          {"name", s.name},
          {"model", s.model},
          {"pci_bus_id", s.pci_bus_id},
          {"host", s.host},
          {"is_mig", s.is_mig},
          {"gpu_instance_id", opt(s.gpu_instance_id)},
          {"mig_profile", s.mig_profile},
          {"gpu_util", opt(s.gpu_util_percent)},
          {"mem_util", opt(s.mem_util_percent)},
          {"sm_active", opt(s.sm_active_percent)},
          {"tensor_active", opt(s.tensor_active_percent)},
          {"dram_active", opt(s.dram_active_percent)},
          {"gr_engine_active", opt(s.gr_engine_active_percent)},
          {"memory_used_bytes", opt(s.memory_used_bytes)},
          {"memory_total_bytes", opt(s.memory_total_bytes)},
          {"temperature_c", opt(s.temperature_c)},
          {"slowdown_temperature_c", opt(s.slowdown_temperature_c)},
          {"memory_temperature_c", opt(s.memory_temperature_c)},
          {"power_w", opt(s.power_w)},
          {"power_limit_w", opt(s.power_limit_w)},
          {"sm_clock_mhz", opt(s.sm_clock_mhz)},
          {"mem_clock_mhz", opt(s.mem_clock_mhz)},
          {"throttle_reasons", opt(s.throttle_reasons)},
          {"ecc_corrected_volatile", opt(s.ecc_corrected_volatile)},
          {"ecc_uncorrected_volatile", opt(s.ecc_uncorrected_volatile)},
          {"energy_mj", opt(s.energy_mj)},
          {"pcie_replay_count", opt(s.pcie_replay_count)},
          {"violation_power_us", opt(s.violation_power_us)},
          {"violation_thermal_us", opt(s.violation_thermal_us)},
          {"violation_sync_boost_us", opt(s.violation_sync_boost_us)},
          {"violation_board_limit_us", opt(s.violation_board_limit_us)},
          {"violation_low_util_us", opt(s.violation_low_util_us)},
          {"violation_reliability_us", opt(s.violation_reliability_us)},
          {"remapped_rows_correctable", opt(s.remapped_rows_correctable)},
          {"remapped_rows_uncorrectable", opt(s.remapped_rows_uncorrectable)},
          {"row_remap_failed", opt(s.row_remap_failed)},
          {"last_xid", opt(s.last_xid)},
          {"xid_count", opt(s.xid_count)},
          {"pcie_tx_bytes_per_s", opt(s.pcie_tx_bytes_per_s)},
          {"pcie_rx_bytes_per_s", opt(s.pcie_rx_bytes_per_s)},
          {"nvlink_tx_bytes_per_s", opt(s.nvlink_tx_bytes_per_s)},
          {"nvlink_rx_bytes_per_s", opt(s.nvlink_rx_bytes_per_s)},
          {"processes", std::move(procs)}};
}

util::Result<GpuSample> sample_from_json(const json& j) {
  if (!j.is_object()) return util::invalid_argument("a GPU sample must be a JSON object");
  GpuSample s;
  try {
    s.time = util::from_millis(j.value("time_ms", int64_t{0}));
    s.index = j.value("index", 0);
    s.uuid = j.value("uuid", "");
    s.name = j.value("name", "");
    s.model = j.value("model", "");
    s.pci_bus_id = j.value("pci_bus_id", "");
    s.host = j.value("host", "");
    s.is_mig = j.value("is_mig", false);
    read_opt(j, "gpu_instance_id", s.gpu_instance_id);
    s.mig_profile = j.value("mig_profile", "");
    read_opt(j, "gpu_util", s.gpu_util_percent);
    read_opt(j, "mem_util", s.mem_util_percent);
    read_opt(j, "sm_active", s.sm_active_percent);
    read_opt(j, "tensor_active", s.tensor_active_percent);
    read_opt(j, "dram_active", s.dram_active_percent);
    read_opt(j, "gr_engine_active", s.gr_engine_active_percent);
    read_opt(j, "memory_used_bytes", s.memory_used_bytes);
    read_opt(j, "memory_total_bytes", s.memory_total_bytes);
    read_opt(j, "temperature_c", s.temperature_c);
    read_opt(j, "slowdown_temperature_c", s.slowdown_temperature_c);
    read_opt(j, "memory_temperature_c", s.memory_temperature_c);
    read_opt(j, "power_w", s.power_w);
    read_opt(j, "power_limit_w", s.power_limit_w);
    read_opt(j, "sm_clock_mhz", s.sm_clock_mhz);
    read_opt(j, "mem_clock_mhz", s.mem_clock_mhz);
    read_opt(j, "throttle_reasons", s.throttle_reasons);
    read_opt(j, "ecc_corrected_volatile", s.ecc_corrected_volatile);
    read_opt(j, "ecc_uncorrected_volatile", s.ecc_uncorrected_volatile);
    read_opt(j, "energy_mj", s.energy_mj);
    read_opt(j, "pcie_replay_count", s.pcie_replay_count);
    read_opt(j, "violation_power_us", s.violation_power_us);
    read_opt(j, "violation_thermal_us", s.violation_thermal_us);
    read_opt(j, "violation_sync_boost_us", s.violation_sync_boost_us);
    read_opt(j, "violation_board_limit_us", s.violation_board_limit_us);
    read_opt(j, "violation_low_util_us", s.violation_low_util_us);
    read_opt(j, "violation_reliability_us", s.violation_reliability_us);
    read_opt(j, "remapped_rows_correctable", s.remapped_rows_correctable);
    read_opt(j, "remapped_rows_uncorrectable", s.remapped_rows_uncorrectable);
    read_opt(j, "row_remap_failed", s.row_remap_failed);
    read_opt(j, "last_xid", s.last_xid);
    read_opt(j, "xid_count", s.xid_count);
    read_opt(j, "pcie_tx_bytes_per_s", s.pcie_tx_bytes_per_s);
    read_opt(j, "pcie_rx_bytes_per_s", s.pcie_rx_bytes_per_s);
    read_opt(j, "nvlink_tx_bytes_per_s", s.nvlink_tx_bytes_per_s);
    read_opt(j, "nvlink_rx_bytes_per_s", s.nvlink_rx_bytes_per_s);
    if (auto it = j.find("processes"); it != j.end() && it->is_array()) {
      for (const auto& p : *it) {
        GpuProcessSample ps;
        ps.pid = p.value("pid", 0);
        read_opt(p, "memory_bytes", ps.memory_bytes);
        read_opt(p, "sm_util", ps.sm_util_percent);
        s.processes.push_back(ps);
      }
    }
  } catch (const json::exception& e) {
    return util::invalid_argument(
        fmt::format("a GPU sample has a field of the wrong type: {}", e.what()));
  }
  return s;
}

}  // namespace trainyard::telemetry
