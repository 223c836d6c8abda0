// Resolves NVML entry points with dlsym. nvml.h maps plain names to the newest versions
// (GetPciInfo -> _v3, ...), so the versioned symbols are named here explicitly.
#include "telemetry/nvml_api.h"

#include <dlfcn.h>

namespace trainyard::telemetry::nvml {
namespace {

template <typename Fn>
bool bind(void* library, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  return fn != nullptr;
}

void bind_optional(Api& api) {
  void* lib = api.library;
  bind(lib, "nvmlInitWithFlags", api.init_with_flags);
  bind(lib, "nvmlDeviceGetGpuInstanceId", api.get_gpu_instance_id);
  bind(lib, "nvmlDeviceGetGpuInstanceById", api.get_gpu_instance_by_id);
  bind(lib, "nvmlGpuInstanceGetInfo", api.get_gpu_instance_info);
  bind(lib, "nvmlDeviceGetPciInfo_v3", api.get_pci_info_v3);
  bind(lib, "nvmlDeviceGetPciInfo_v2", api.get_pci_info_v2);
  bind(lib, "nvmlDeviceGetUtilizationRates", api.get_utilization);
  bind(lib, "nvmlDeviceGetMemoryInfo_v2", api.get_memory_v2);
  bind(lib, "nvmlDeviceGetTemperatureV", api.get_temperature_v);
  bind(lib, "nvmlDeviceGetTemperature", api.get_temperature);
  bind(lib, "nvmlDeviceGetTemperatureThreshold", api.get_temperature_threshold);
  bind(lib, "nvmlDeviceGetPowerUsage", api.get_power_usage);
  bind(lib, "nvmlDeviceGetEnforcedPowerLimit", api.get_enforced_power_limit);
  bind(lib, "nvmlDeviceGetClockInfo", api.get_clock);
  bind(lib, "nvmlDeviceGetCurrentClocksEventReasons", api.get_clocks_event_reasons);
  bind(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", api.get_clocks_throttle_reasons);
  bind(lib, "nvmlDeviceGetTotalEccErrors", api.get_total_ecc_errors);
  bind(lib, "nvmlDeviceGetPcieThroughput", api.get_pcie_throughput);
  bind(lib, "nvmlDeviceGetComputeRunningProcesses_v3", api.get_processes_v3);
  bind(lib, "nvmlDeviceGetComputeRunningProcesses_v2", api.get_processes_v2);
  bind(lib, "nvmlDeviceGetComputeRunningProcesses", api.get_processes_v1);
  bind(lib, "nvmlDeviceGetProcessUtilization", api.get_process_utilization);
  bind(lib, "nvmlEventSetCreate", api.event_set_create);
  bind(lib, "nvmlEventSetFree", api.event_set_free);
  bind(lib, "nvmlDeviceRegisterEvents", api.register_events);
  bind(lib, "nvmlEventSetWait_v2", api.event_set_wait);
  bind(lib, "nvmlDeviceGetTotalEnergyConsumption", api.get_total_energy);
  bind(lib, "nvmlDeviceGetPcieReplayCounter", api.get_pcie_replay_counter);
  bind(lib, "nvmlDeviceGetViolationStatus", api.get_violation_status);
  bind(lib, "nvmlDeviceGetRemappedRows", api.get_remapped_rows);
  bind(lib, "nvmlDeviceGetFieldValues", api.get_field_values);
  bind(lib, "nvmlGpmQueryDeviceSupport", api.gpm_query_support);
  bind(lib, "nvmlGpmSampleAlloc", api.gpm_sample_alloc);
  bind(lib, "nvmlGpmSampleFree", api.gpm_sample_free);
  bind(lib, "nvmlGpmSampleGet", api.gpm_sample_get);
  bind(lib, "nvmlGpmMetricsGet", api.gpm_metrics_get);
  // Drivers 535.43-535.86 wrote a 32-byte process info from *_v3 (it appends the confidential-
  // computing memory); a wrong stride corrupts every pid after the first. Those drivers are the
  // only ones with nvmlDeviceGetConfComputeMemSizeInfo but not yet
  // nvmlDeviceGetRunningProcessDetailList, the test nvitop uses.
  api.processes_v3_cc_layout = dlsym(lib, "nvmlDeviceGetConfComputeMemSizeInfo") != nullptr &&
                               dlsym(lib, "nvmlDeviceGetRunningProcessDetailList") == nullptr;
}

}  // namespace

const char* bind_all(Api& api) {
  void* lib = api.library;
  if (!bind(lib, "nvmlInit_v2", api.init)) return "nvmlInit_v2";
  if (!bind(lib, "nvmlShutdown", api.shutdown)) return "nvmlShutdown";
  if (!bind(lib, "nvmlErrorString", api.error_string)) return "nvmlErrorString";
  if (!bind(lib, "nvmlDeviceGetCount_v2", api.get_count)) return "nvmlDeviceGetCount_v2";
  if (!bind(lib, "nvmlDeviceGetHandleByIndex_v2", api.get_handle)) {
    return "nvmlDeviceGetHandleByIndex_v2";
  }
  if (!bind(lib, "nvmlDeviceGetName", api.get_name)) return "nvmlDeviceGetName";
  if (!bind(lib, "nvmlDeviceGetUUID", api.get_uuid)) return "nvmlDeviceGetUUID";
  if (!bind(lib, "nvmlDeviceGetMemoryInfo", api.get_memory)) return "nvmlDeviceGetMemoryInfo";
  if (!bind(lib, "nvmlDeviceGetMigMode", api.get_mig_mode)) return "nvmlDeviceGetMigMode";
  if (!bind(lib, "nvmlDeviceGetMaxMigDeviceCount", api.get_max_mig_count)) {
    return "nvmlDeviceGetMaxMigDeviceCount";
  }
  if (!bind(lib, "nvmlDeviceGetMigDeviceHandleByIndex", api.get_mig_handle)) {
    return "nvmlDeviceGetMigDeviceHandleByIndex";
  }
  bind_optional(api);
  return nullptr;
}

}  // namespace trainyard::telemetry::nvml
