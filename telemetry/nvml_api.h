// NVML's C ABI as trainyard uses it: the few types, constants and entry points, declared here so
// that no NVIDIA header is needed to build (layouts as in nvml.h, API 13). Used only by the NVML
// sampler (nvml_*.cc). Optional entry points stay null when the loaded driver lacks them.
#pragma once

#include <cstdint>

namespace trainyard::telemetry::nvml {

using Return = int;
using Device = struct DeviceOpaque*;
using GpuInstance = struct GpuInstanceOpaque*;
using EventSet = struct EventSetOpaque*;

inline constexpr Return kSuccess = 0;
inline constexpr Return kNotFound = 6;
inline constexpr Return kInsufficientSize = 7;
inline constexpr Return kTimeout = 10;

inline constexpr unsigned int kInitFlagNoGpus = 1;  // init succeeds on a machine without GPUs
inline constexpr unsigned int kMigEnabled = 1;
inline constexpr unsigned int kStringSize = 96;  // NVML_DEVICE_{NAME,UUID}_V2_BUFFER_SIZE
inline constexpr unsigned int kTemperatureGpu = 0;
inline constexpr unsigned int kThresholdSlowdown = 1;
inline constexpr unsigned int kClockSm = 1;
inline constexpr unsigned int kClockMem = 2;
inline constexpr unsigned int kEccCorrected = 0;
inline constexpr unsigned int kEccUncorrected = 1;
inline constexpr unsigned int kEccVolatile = 0;
inline constexpr unsigned int kPcieTx = 0;
inline constexpr unsigned int kPcieRx = 1;
inline constexpr unsigned long long kEventXid = 0x8;
inline constexpr unsigned int kNoInstance = 0xFFFFFFFF;  // GI/CI of an event outside MIG
// nvmlPerfPolicyType_t: the causes nvmlDeviceGetViolationStatus reports.
inline constexpr unsigned int kPerfPolicyPower = 0;
inline constexpr unsigned int kPerfPolicyThermal = 1;
inline constexpr unsigned int kPerfPolicySyncBoost = 2;
inline constexpr unsigned int kPerfPolicyBoardLimit = 3;
inline constexpr unsigned int kPerfPolicyLowUtilization = 4;
inline constexpr unsigned int kPerfPolicyReliability = 5;
// Field ids of nvmlDeviceGetFieldValues.
inline constexpr unsigned int kFieldMemoryTemp = 82;        // NVML_FI_DEV_MEMORY_TEMP, C
inline constexpr unsigned int kFieldNvlinkDataTx = 138;     // ..._NVLINK_THROUGHPUT_DATA_TX, KiB
inline constexpr unsigned int kFieldNvlinkDataRx = 139;     // ..._NVLINK_THROUGHPUT_DATA_RX, KiB
inline constexpr unsigned int kFieldPcieTxBytes = 197;      // NVML_FI_DEV_PCIE_COUNT_TX_BYTES
inline constexpr unsigned int kFieldPcieRxBytes = 198;      // NVML_FI_DEV_PCIE_COUNT_RX_BYTES
inline constexpr unsigned int kScopeAllLinks = 0xFFFFFFFF;  // scopeId: the sum over all links
// nvmlValueType_t.
inline constexpr int kValueDouble = 0;
inline constexpr int kValueUint = 1;
inline constexpr int kValueUlong = 2;
inline constexpr int kValueUlonglong = 3;
inline constexpr int kValueSlonglong = 4;
inline constexpr int kValueSint = 5;
// GPM metric ids (nvmlGpmMetricId_t), each 0..100.
inline constexpr unsigned int kGpmGraphicsUtil = 1;
inline constexpr unsigned int kGpmSmUtil = 2;
inline constexpr unsigned int kGpmAnyTensorUtil = 5;
inline constexpr unsigned int kGpmDramBwUtil = 10;
inline constexpr unsigned int kGpmMetricMax = 98;  // array size of GPM metrics-get version 1
inline constexpr unsigned int kGpmMetricsGetVersion = 1;
inline constexpr unsigned int kGpmSupportVersion = 1;

struct PciInfo {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
  unsigned int spare[8];  // room in case a driver's struct has grown
};
struct Utilization {
  unsigned int gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;  // v1: `used` includes reserved memory
};
// The version word encodes the struct's size, so it must match nvml.h exactly (no spare room).
struct MemoryV2 {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
static_assert(sizeof(MemoryV2) == 40);
inline constexpr unsigned int kMemoryV2Version = sizeof(MemoryV2) | (2u << 24);
struct TemperatureV1 {
  unsigned int version;
  int sensor_type;
  int temperature;
};
static_assert(sizeof(TemperatureV1) == 12);
inline constexpr unsigned int kTemperatureV1Version = sizeof(TemperatureV1) | (1u << 24);
// The three process-info layouts that the running-process getters write, by stride.
struct ProcessInfoV1 {  // base nvmlDeviceGetComputeRunningProcesses
  unsigned int pid;
  unsigned long long used_gpu_memory;
};
struct ProcessInfoV2 {  // _v2 and _v3
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
struct ProcessInfoCc {  // _v3 of drivers 535.43-535.86 only
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
  unsigned long long used_gpu_cc_protected_memory;
};
static_assert(sizeof(ProcessInfoV1) == 16 && sizeof(ProcessInfoV2) == 24 &&
              sizeof(ProcessInfoCc) == 32);
struct ProcessUtilizationSample {
  unsigned int pid;
  unsigned long long time_stamp;  // CPU timestamp, microseconds
  unsigned int sm_util, mem_util, enc_util, dec_util;
};
struct EventData {
  Device device;
  unsigned long long event_type, event_data;  // event_data: the Xid
  unsigned int gpu_instance_id, compute_instance_id;
};
struct ViolationTime {
  unsigned long long reference_time_us;  // CPU timestamp
  unsigned long long violation_time_ns;  // since the driver loaded
};
union Value {
  double d;
  unsigned int ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
  int si;
};
struct FieldValue {
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp_us;
  long long latency_us;
  int value_type;  // kValue*
  Return nvml_return;
  Value value;
};
static_assert(sizeof(FieldValue) == 40);
using GpmSample = struct GpmSampleOpaque*;
struct GpmMetric {
  unsigned int metric_id;
  Return nvml_return;
  double value;
  struct {
    char* short_name;
    char* long_name;
    char* unit;
  } info;
};
struct GpmMetricsGet {
  unsigned int version;  // kGpmMetricsGetVersion
  unsigned int num_metrics;
  GpmSample sample1, sample2;
  GpmMetric metrics[kGpmMetricMax];
};
struct GpmSupport {
  unsigned int version;  // kGpmSupportVersion
  unsigned int is_supported_device;
};
struct GpuInstanceInfo {
  Device device;
  unsigned int id;
  unsigned int profile_id;
  unsigned int placement_start;
  unsigned int placement_size;
  unsigned int spare[16];  // room in case a driver's struct has grown
};

using ProcessGetter = Return (*)(Device, unsigned int*, void*);
using UintGetter = Return (*)(Device, unsigned int*);

struct Api {
  void* library = nullptr;
  // Required: without these the sampler refuses the library.
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  const char* (*error_string)(Return) = nullptr;
  Return (*get_count)(unsigned int*) = nullptr;
  Return (*get_handle)(unsigned int, Device*) = nullptr;
  Return (*get_name)(Device, char*, unsigned int) = nullptr;
  Return (*get_uuid)(Device, char*, unsigned int) = nullptr;
  Return (*get_memory)(Device, Memory*) = nullptr;
  Return (*get_mig_mode)(Device, unsigned int*, unsigned int*) = nullptr;
  Return (*get_max_mig_count)(Device, unsigned int*) = nullptr;
  Return (*get_mig_handle)(Device, unsigned int, Device*) = nullptr;

  // Optional, each a newer entry point and, where one exists, its older fallback.
  Return (*init_with_flags)(unsigned int) = nullptr;
  Return (*get_gpu_instance_id)(Device, unsigned int*) = nullptr;
  Return (*get_gpu_instance_by_id)(Device, unsigned int, GpuInstance*) = nullptr;
  Return (*get_gpu_instance_info)(GpuInstance, GpuInstanceInfo*) = nullptr;
  Return (*get_pci_info_v3)(Device, PciInfo*) = nullptr;
  Return (*get_pci_info_v2)(Device, PciInfo*) = nullptr;
  Return (*get_utilization)(Device, Utilization*) = nullptr;
  Return (*get_memory_v2)(Device, MemoryV2*) = nullptr;
  Return (*get_temperature_v)(Device, TemperatureV1*) = nullptr;
  Return (*get_temperature)(Device, unsigned int, unsigned int*) = nullptr;
  Return (*get_temperature_threshold)(Device, unsigned int, unsigned int*) = nullptr;
  UintGetter get_power_usage = nullptr;           // mW
  UintGetter get_enforced_power_limit = nullptr;  // mW
  Return (*get_clock)(Device, unsigned int, unsigned int*) = nullptr;
  Return (*get_clocks_event_reasons)(Device, unsigned long long*) = nullptr;
  Return (*get_clocks_throttle_reasons)(Device, unsigned long long*) = nullptr;
  Return (*get_total_ecc_errors)(Device, unsigned int, unsigned int, unsigned long long*) = nullptr;
  Return (*get_pcie_throughput)(Device, unsigned int, unsigned int*) = nullptr;  // KB/s
  ProcessGetter get_processes_v3 = nullptr;
  ProcessGetter get_processes_v2 = nullptr;
  ProcessGetter get_processes_v1 = nullptr;
  Return (*get_process_utilization)(Device, ProcessUtilizationSample*, unsigned int*,
                                    unsigned long long) = nullptr;
  Return (*event_set_create)(EventSet*) = nullptr;
  Return (*event_set_free)(EventSet) = nullptr;
  Return (*register_events)(Device, unsigned long long, EventSet) = nullptr;
  Return (*event_set_wait)(EventSet, EventData*, unsigned int) = nullptr;  // _v2
  Return (*get_total_energy)(Device, unsigned long long*) = nullptr;       // mJ
  UintGetter get_pcie_replay_counter = nullptr;
  Return (*get_violation_status)(Device, unsigned int, ViolationTime*) = nullptr;
  Return (*get_remapped_rows)(Device, unsigned int*, unsigned int*, unsigned int*,
                              unsigned int*) = nullptr;  // corrected, uncorrected, pending, failed
  Return (*get_field_values)(Device, int, FieldValue*) = nullptr;
  Return (*gpm_query_support)(Device, GpmSupport*) = nullptr;
  Return (*gpm_sample_alloc)(GpmSample*) = nullptr;
  Return (*gpm_sample_free)(GpmSample) = nullptr;
  Return (*gpm_sample_get)(Device, GpmSample) = nullptr;
  Return (*gpm_metrics_get)(GpmMetricsGet*) = nullptr;

  // Whether *_v3 process getters write the 32-byte ProcessInfoCc (see nvml_api.cc).
  bool processes_v3_cc_layout = false;
};

// Resolves every entry point of `api.library`; returns the first required one that is missing,
// or nullptr when all required ones are there.
const char* bind_all(Api& api);

}  // namespace trainyard::telemetry::nvml
