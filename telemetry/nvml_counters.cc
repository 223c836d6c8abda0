// NVML readings of dcgm-exporter's default fields beyond the basic ones: counters since the
// driver loaded (energy, PCIe replays, clock-violation times, remapped rows) and the values that
// come only through nvmlDeviceGetFieldValues (memory temperature, NVLink and PCIe byte counters).
// Each entry point is optional; a missing one, an error or a blank value leaves its field nullopt.
#include <optional>

#include "telemetry/nvml_readings.h"

namespace trainyard::telemetry::nvml {
namespace {

constexpr unsigned long long kBlankFloor = 0x7ff0000000000000ull;  // as in nvml_readings.cc
constexpr double kMinTemperatureC = -40;
constexpr double kMaxTemperatureC = 150;
constexpr unsigned long long kNanosecondsPerMicrosecond = 1000;
constexpr uint64_t kBytesPerKib = 1024;

std::optional<uint64_t> not_blank(unsigned long long value) {
  if (value >= kBlankFloor) return std::nullopt;
  return static_cast<uint64_t>(value);
}

std::optional<uint64_t> violation_us(const Api& api, Device device, unsigned int policy) {
  ViolationTime v{};
  if (!api.get_violation_status || api.get_violation_status(device, policy, &v) != kSuccess)
    return std::nullopt;
  auto ns = not_blank(v.violation_time_ns);
  if (!ns) return std::nullopt;
  return *ns / kNanosecondsPerMicrosecond;
}

void read_violations(const Api& api, Device device, GpuSample& out) {
  out.violation_power_us = violation_us(api, device, kPerfPolicyPower);
  out.violation_thermal_us = violation_us(api, device, kPerfPolicyThermal);
  out.violation_sync_boost_us = violation_us(api, device, kPerfPolicySyncBoost);
  out.violation_board_limit_us = violation_us(api, device, kPerfPolicyBoardLimit);
  out.violation_low_util_us = violation_us(api, device, kPerfPolicyLowUtilization);
  out.violation_reliability_us = violation_us(api, device, kPerfPolicyReliability);
}

void read_remapped_rows(const Api& api, Device device, GpuSample& out) {
  unsigned int corrected = 0, uncorrected = 0, pending = 0, failed = 0;
  if (!api.get_remapped_rows ||
      api.get_remapped_rows(device, &corrected, &uncorrected, &pending, &failed) != kSuccess)
    return;
  out.remapped_rows_correctable = corrected;
  out.remapped_rows_uncorrectable = uncorrected;
  out.row_remap_failed = failed != 0;
}

// A field value as a number, whatever its type; nullopt when the driver could not read it.
std::optional<double> field_number(const FieldValue& f) {
  if (f.nvml_return != kSuccess) return std::nullopt;
  switch (f.value_type) {
    case kValueDouble:
      return f.value.d;
    case kValueUint:
      return f.value.ui;
    case kValueUlong:
      return static_cast<double>(f.value.ul);
    case kValueUlonglong:
      if (f.value.ull >= kBlankFloor) return std::nullopt;
      return static_cast<double>(f.value.ull);
    case kValueSlonglong:
      return static_cast<double>(f.value.sll);
    case kValueSint:
      return f.value.si;
    default:
      return std::nullopt;
  }
}

std::optional<double> read_memory_temperature(const Api& api, Device device) {
  if (!api.get_field_values) return std::nullopt;
  FieldValue f{};
  f.field_id = kFieldMemoryTemp;
  if (api.get_field_values(device, 1, &f) != kSuccess) return std::nullopt;
  auto t = field_number(f);
  // GPUs without an HBM sensor answer 0 on some drivers.
  if (!t || *t <= 0 || *t < kMinTemperatureC || *t > kMaxTemperatureC) return std::nullopt;
  return t;
}

// Two field-value counters read in one call (tx, rx), in bytes: `unit` bytes per count.
std::optional<ByteCounters> read_counter_pair(const Api& api, Device device, unsigned int tx_field,
                                              unsigned int rx_field, unsigned int scope,
                                              uint64_t unit) {
  if (!api.get_field_values) return std::nullopt;
  FieldValue f[2]{};
  f[0].field_id = tx_field;
  f[1].field_id = rx_field;
  f[0].scope_id = f[1].scope_id = scope;
  if (api.get_field_values(device, 2, f) != kSuccess) return std::nullopt;
  auto tx = field_number(f[0]);
  auto rx = field_number(f[1]);
  if (!tx || !rx || *tx < 0 || *rx < 0) return std::nullopt;
  return ByteCounters{.tx_bytes = static_cast<uint64_t>(*tx) * unit,
                      .rx_bytes = static_cast<uint64_t>(*rx) * unit};
}

}  // namespace

void read_counter_fields(const Api& api, Device device, GpuSample& out) {
  read_remapped_rows(api, device, out);
  out.memory_temperature_c = read_memory_temperature(api, device);
}

void read_costly_counters(const Api& api, Device device, GpuSample& out) {
  unsigned long long energy = 0;
  if (api.get_total_energy && api.get_total_energy(device, &energy) == kSuccess)
    out.energy_mj = not_blank(energy);
  unsigned int replays = 0;
  if (api.get_pcie_replay_counter && api.get_pcie_replay_counter(device, &replays) == kSuccess &&
      replays != 0xFFFFFFFF)
    out.pcie_replay_count = replays;
  read_violations(api, device, out);
}

std::optional<ByteCounters> read_nvlink_counters(const Api& api, Device device) {
  return read_counter_pair(api, device, kFieldNvlinkDataTx, kFieldNvlinkDataRx, kScopeAllLinks,
                           kBytesPerKib);
}

std::optional<ByteCounters> read_pcie_counters(const Api& api, Device device) {
  return read_counter_pair(api, device, kFieldPcieTxBytes, kFieldPcieRxBytes, 0, 1);
}

}  // namespace trainyard::telemetry::nvml
