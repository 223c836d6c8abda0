// The GPU telemetry resources of the API (api_telemetry_views.h): the only place their key names
// are written.
#include "model/api_telemetry_views.h"

#include "model/internal/api_json.h"

namespace trainyard::model {

using api_json::FieldReader;
using api_json::Json;
using api_json::or_null;
using api_json::read_view;

// Defined with the job views (api_job_views.cc): a job telemetry's `summary`.
void read_fields(FieldReader& r, UtilizationView& v);

namespace {

Json measurements_json(const GpuMeasurementsView& m) {
  return {{"time", m.time},
          {"gpuUtilPercent", or_null(m.gpu_util_percent)},
          {"memUtilPercent", or_null(m.mem_util_percent)},
          {"smActivePercent", or_null(m.sm_active_percent)},
          {"tensorActivePercent", or_null(m.tensor_active_percent)},
          {"dramActivePercent", or_null(m.dram_active_percent)},
          {"grEngineActivePercent", or_null(m.gr_engine_active_percent)},
          {"memoryTemperatureC", or_null(m.memory_temperature_c)},
          {"energyMillijoules", or_null(m.energy_millijoules)},
          {"memoryUsedBytes", or_null(m.memory_used_bytes)},
          {"memoryTotalBytes", or_null(m.memory_total_bytes)},
          {"temperatureC", or_null(m.temperature_c)},
          {"slowdownTemperatureC", or_null(m.slowdown_temperature_c)},
          {"powerW", or_null(m.power_w)},
          {"powerLimitW", or_null(m.power_limit_w)},
          {"smClockMHz", or_null(m.sm_clock_mhz)},
          {"memClockMHz", or_null(m.mem_clock_mhz)},
          {"throttleReasons", or_null(m.throttle_reasons)},
          {"eccCorrectedVolatile", or_null(m.ecc_corrected_volatile)},
          {"eccUncorrectedVolatile", or_null(m.ecc_uncorrected_volatile)},
          {"lastXid", or_null(m.last_xid)},
          {"xidCount", or_null(m.xid_count)},
          {"pcieTxBytesPerSecond", or_null(m.pcie_tx_bytes_per_second)},
          {"pcieRxBytesPerSecond", or_null(m.pcie_rx_bytes_per_second)},
          {"nvlinkTxBytesPerSecond", or_null(m.nvlink_tx_bytes_per_second)},
          {"nvlinkRxBytesPerSecond", or_null(m.nvlink_rx_bytes_per_second)}};
}

Json process_json(const GpuProcessView& p) {
  return {{"pid", p.pid},
          {"memoryBytes", or_null(p.memory_bytes)},
          {"smUtilPercent", or_null(p.sm_util_percent)},
          {"job", or_null(p.job)},
          {"user", or_null(p.user)},
          {"command", or_null(p.command)}};
}

Json device_json(const GpuDeviceView& d) {
  Json j = {{"index", d.index},
            {"uuid", d.uuid},
            {"name", d.name},
            {"model", d.model},
            {"pciBusId", d.pci_bus_id},
            {"mig", d.mig},
            {"migProfile", d.mig_profile},
            {"gpuInstanceId", or_null(d.gpu_instance_id)}};
  j.update(measurements_json(d.measurements));
  Json jobs = Json::array();
  for (const auto& g : d.jobs)
    jobs.push_back({{"id", g.id}, {"team", g.team}, {"name", or_null(g.name)}});
  j["jobs"] = std::move(jobs);
  Json processes = Json::array();
  for (const auto& p : d.processes) processes.push_back(process_json(p));
  j["processes"] = std::move(processes);
  return j;
}

Json minute_json(const TelemetryMinuteView& m) {
  Json j = {{"device", m.device},
            {"minute", m.minute},
            {"samples", m.samples},
            {"gpuUtilAvg", or_null(m.gpu_util_avg)},
            {"gpuUtilMax", or_null(m.gpu_util_max)},
            {"memUtilAvg", or_null(m.mem_util_avg)},
            {"smActiveAvg", or_null(m.sm_active_avg)},
            {"tensorActiveAvg", or_null(m.tensor_active_avg)},
            {"memoryUsedAvgBytes", or_null(m.memory_used_avg_bytes)},
            {"memoryUsedMaxBytes", or_null(m.memory_used_max_bytes)},
            {"memoryTotalBytes", or_null(m.memory_total_bytes)},
            {"temperatureAvgC", or_null(m.temperature_avg_c)},
            {"temperatureMaxC", or_null(m.temperature_max_c)},
            {"powerAvgW", or_null(m.power_avg_w)},
            {"powerMaxW", or_null(m.power_max_w)},
            {"smClockAvgMHz", or_null(m.sm_clock_avg_mhz)},
            {"throttleReasons", or_null(m.throttle_reasons)},
            {"eccUncorrectedMax", or_null(m.ecc_uncorrected_max)},
            {"lastXid", or_null(m.last_xid)}};
  if (m.partial) j["partial"] = true;
  return j;
}

}  // namespace

Json to_json(const GpuListView& v) {
  Json items = Json::array();
  for (const auto& d : v.items) items.push_back(device_json(d));
  return {{"items", std::move(items)}, {"intervalSeconds", or_null(v.interval_seconds)}};
}

Json to_json(const JobTelemetryView& v) {
  Json minutes = Json::array();
  for (const auto& m : v.minutes) minutes.push_back(minute_json(m));
  Json samples = Json::array();
  for (const auto& s : v.samples) {
    Json j = measurements_json(s.measurements);
    j["device"] = s.device;
    samples.push_back(std::move(j));
  }
  return {{"job", v.job},
          {"intervalSeconds", or_null(v.interval_seconds)},
          {"summary", to_json(v.summary)},
          {"minutes", std::move(minutes)},
          {"samples", std::move(samples)}};
}

// ---- readers ---------------------------------------------------------------------------------

namespace {

// The measurement keys of the object `r` reads (a device or a sample).
void read_measurements(FieldReader& r, GpuMeasurementsView& m) {
  r.required("time", m.time)
      .nullable("gpuUtilPercent", m.gpu_util_percent)
      .nullable("memUtilPercent", m.mem_util_percent)
      .nullable("smActivePercent", m.sm_active_percent)
      .nullable("tensorActivePercent", m.tensor_active_percent)
      .nullable("dramActivePercent", m.dram_active_percent)
      .nullable("grEngineActivePercent", m.gr_engine_active_percent)
      .nullable("memoryTemperatureC", m.memory_temperature_c)
      .nullable("energyMillijoules", m.energy_millijoules)
      .nullable("memoryUsedBytes", m.memory_used_bytes)
      .nullable("memoryTotalBytes", m.memory_total_bytes)
      .nullable("temperatureC", m.temperature_c)
      .nullable("slowdownTemperatureC", m.slowdown_temperature_c)
      .nullable("powerW", m.power_w)
      .nullable("powerLimitW", m.power_limit_w)
      .nullable("smClockMHz", m.sm_clock_mhz)
      .nullable("memClockMHz", m.mem_clock_mhz)
      .nullable("throttleReasons", m.throttle_reasons)
      .nullable("eccCorrectedVolatile", m.ecc_corrected_volatile)
      .nullable("eccUncorrectedVolatile", m.ecc_uncorrected_volatile)
      .nullable("lastXid", m.last_xid)
      .nullable("xidCount", m.xid_count)
      .nullable("pcieTxBytesPerSecond", m.pcie_tx_bytes_per_second)
      .nullable("pcieRxBytesPerSecond", m.pcie_rx_bytes_per_second)
      .nullable("nvlinkTxBytesPerSecond", m.nvlink_tx_bytes_per_second)
      .nullable("nvlinkRxBytesPerSecond", m.nvlink_rx_bytes_per_second);
}

}  // namespace

void read_fields(FieldReader& r, GpuJobView& g) {
  r.required("id", g.id).required("team", g.team).nullable("name", g.name);
}

void read_fields(FieldReader& r, GpuProcessView& p) {
  r.required("pid", p.pid)
      .nullable("memoryBytes", p.memory_bytes)
      .nullable("smUtilPercent", p.sm_util_percent)
      .nullable("job", p.job)
      .nullable("user", p.user)
      .nullable("command", p.command);
}

void read_fields(FieldReader& r, GpuDeviceView& d) {
  r.required("index", d.index)
      .required("uuid", d.uuid)
      .required("name", d.name)
      .required("model", d.model)
      .required("pciBusId", d.pci_bus_id)
      .required("mig", d.mig)
      .required("migProfile", d.mig_profile)
      .nullable("gpuInstanceId", d.gpu_instance_id);
  read_measurements(r, d.measurements);
  r.required("jobs", d.jobs).required("processes", d.processes);
}

void read_fields(FieldReader& r, GpuListView& v) {
  r.required("items", v.items).nullable("intervalSeconds", v.interval_seconds);
}

void read_fields(FieldReader& r, TelemetryMinuteView& m) {
  std::optional<bool> partial;
  r.required("device", m.device)
      .required("minute", m.minute)
      .required("samples", m.samples)
      .nullable("gpuUtilAvg", m.gpu_util_avg)
      .nullable("gpuUtilMax", m.gpu_util_max)
      .nullable("memUtilAvg", m.mem_util_avg)
      .nullable("smActiveAvg", m.sm_active_avg)
      .nullable("tensorActiveAvg", m.tensor_active_avg)
      .nullable("memoryUsedAvgBytes", m.memory_used_avg_bytes)
      .nullable("memoryUsedMaxBytes", m.memory_used_max_bytes)
      .nullable("memoryTotalBytes", m.memory_total_bytes)
      .nullable("temperatureAvgC", m.temperature_avg_c)
      .nullable("temperatureMaxC", m.temperature_max_c)
      .nullable("powerAvgW", m.power_avg_w)
      .nullable("powerMaxW", m.power_max_w)
      .nullable("smClockAvgMHz", m.sm_clock_avg_mhz)
      .nullable("throttleReasons", m.throttle_reasons)
      .nullable("eccUncorrectedMax", m.ecc_uncorrected_max)
      .nullable("lastXid", m.last_xid)
      .optional("partial", partial);
  m.partial = partial.value_or(false);
}

void read_fields(FieldReader& r, TelemetrySampleView& s) {
  r.required("device", s.device);
  read_measurements(r, s.measurements);
}

void read_fields(FieldReader& r, JobTelemetryView& v) {
  r.required("job", v.job)
      .nullable("intervalSeconds", v.interval_seconds)
      .required("summary", v.summary)
      .required("minutes", v.minutes)
      .required("samples", v.samples);
}

util::Status from_json(const Json& j, GpuListView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, JobTelemetryView& out) {
  return read_view(j, out);
}

}  // namespace trainyard::model
