// The GPU telemetry resources of the HTTP API as plain structs (docs/api.md): GET /api/v1/gpus
// (what `trainyard top` draws) and GET /api/v1/jobs/{id}/telemetry (a job's per-minute and raw
// GPU samples, for `trainyard telemetry` and `show`). As in model/api_views.h, the server writes
// its replies from them and the CLI reads replies back into them, so each key name is written
// once (api_telemetry_views.cc); from_json names the first missing or ill-typed field by its
// path and never throws. A measurement the sampler did not take is null on the wire (nullopt).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/api_views.h"
#include "util/status.h"

namespace trainyard::model {

// The measurements of one GPU sample: the keys a device of GET /api/v1/gpus and a raw sample
// of a job's telemetry share. Integers stay integers on the wire, percentages and watts numbers.
struct GpuMeasurementsView {
  std::string time;  // RFC 3339 with milliseconds
  std::optional<double> gpu_util_percent, mem_util_percent, sm_active_percent,
      tensor_active_percent, dram_active_percent, gr_engine_active_percent, memory_temperature_c;
  std::optional<uint64_t> energy_millijoules, memory_used_bytes, memory_total_bytes;
  std::optional<double> temperature_c, slowdown_temperature_c, power_w, power_limit_w, sm_clock_mhz,
      mem_clock_mhz;
  std::optional<uint64_t> throttle_reasons, ecc_corrected_volatile, ecc_uncorrected_volatile;
  std::optional<int> last_xid;
  std::optional<uint64_t> xid_count;
  std::optional<double> pcie_tx_bytes_per_second, pcie_rx_bytes_per_second,
      nvlink_tx_bytes_per_second, nvlink_rx_bytes_per_second;
  bool operator==(const GpuMeasurementsView&) const = default;
};

// A job on a device; its name only to tokens that may see its team (null otherwise).
struct GpuJobView {
  int64_t id = 0;
  std::string team;
  std::optional<std::string> name;
  bool operator==(const GpuJobView&) const = default;
};

// A process on a device; user and command only to those who may see its job's team.
struct GpuProcessView {
  int pid = 0;
  std::optional<uint64_t> memory_bytes;
  std::optional<double> sm_util_percent;
  std::optional<int64_t> job;  // null: no job of trainyard's
  std::optional<std::string> user, command;
  bool operator==(const GpuProcessView&) const = default;
};

// A GPU or MIG device with its newest sample.
struct GpuDeviceView {
  int index = 0;
  std::string uuid;
  std::string name;
  std::string model;
  std::string pci_bus_id;
  bool mig = false;
  std::string mig_profile;             // "" unless MIG
  std::optional<int> gpu_instance_id;  // MIG only
  GpuMeasurementsView measurements;    // flattened into the device object
  std::vector<GpuJobView> jobs;
  std::vector<GpuProcessView> processes;
  bool operator==(const GpuDeviceView&) const = default;
};

// GET /api/v1/gpus.
struct GpuListView {
  std::vector<GpuDeviceView> items;
  std::optional<double> interval_seconds;  // null without a sampler
  bool operator==(const GpuListView&) const = default;
};

// One device's minute of a job's telemetry: stored, or (partial) the one in progress.
struct TelemetryMinuteView {
  std::string device;
  std::string minute;  // the minute's start
  int64_t samples = 0;
  std::optional<double> gpu_util_avg, gpu_util_max, mem_util_avg, sm_active_avg, tensor_active_avg,
      memory_used_avg_bytes;
  std::optional<int64_t> memory_used_max_bytes, memory_total_bytes;
  std::optional<double> temperature_avg_c, temperature_max_c, power_avg_w, power_max_w,
      sm_clock_avg_mhz;
  std::optional<int64_t> throttle_reasons, ecc_uncorrected_max, last_xid;
  bool partial = false;  // written only when true
  bool operator==(const TelemetryMinuteView&) const = default;
};

// A raw sample of a job's device.
struct TelemetrySampleView {
  std::string device;
  GpuMeasurementsView measurements;  // flattened into the sample object
  bool operator==(const TelemetrySampleView&) const = default;
};

// GET /api/v1/jobs/{id}/telemetry.
struct JobTelemetryView {
  int64_t job = 0;
  std::optional<double> interval_seconds;  // null without a sampler
  UtilizationView summary;
  std::vector<TelemetryMinuteView> minutes;
  std::vector<TelemetrySampleView> samples;  // the newest, oldest first
  bool operator==(const JobTelemetryView&) const = default;
};

nlohmann::json to_json(const GpuListView& v);
nlohmann::json to_json(const JobTelemetryView& v);

util::Status from_json(const nlohmann::json& j, GpuListView& out);
util::Status from_json(const nlohmann::json& j, JobTelemetryView& out);

}  // namespace trainyard::model
