// A stand-in for libnvidia-ml.so with three GPUs, so the NVML sampler's real code path (dlopen,
// symbol lookup, device and MIG enumeration, readings) runs in tests on machines without a driver.
// GPU 0: H100 80GB, MIG off, busy with two processes and one pending XID 79.
// GPU 1: A100 40GB, MIG on, instances in slots 0 and 2 (slot 1 empty); reports "blank" values.
// GPU 2: T4, no MIG, no ECC, no memory _v2 (answers a version mismatch), utilization sentinel.
// Every value is distinct so a test can tell which call and which unit produced a field.
// Environment: TY_FAKE_NVML_INIT_ERROR makes init fail, TY_FAKE_NVML_GPU_LOST the device count.
// ty_fake_nvml_calls("nvml...") says how often a few costly entry points were called.
// Built three ways:
//   default                  every entry point a current driver has (with fake_nvml_fields.cc:
//                            energy, replays, violations, remapped rows, field values, GPM);
//   TY_FAKE_NVML_MINIMAL     only the required ones and the older fallbacks;
//   TY_FAKE_NVML_CC_PROCESS  a 535.43-535.86 driver: _v3 process infos of 32 bytes.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kNotFound = 6;
constexpr int kInsufficientSize = 7;
constexpr int kDriverNotLoaded = 9;
constexpr int kGpuIsLost = 15;
[[maybe_unused]] constexpr int kTimeout = 10;
[[maybe_unused]] constexpr int kArgumentVersionMismatch = 25;
constexpr unsigned long long kMiB = 1ull << 20;
constexpr unsigned int kUnsupported = 0xFFFFFFFF;    // "this GPU answers NOT_SUPPORTED"
constexpr unsigned long long kNotAvailable = ~0ull;  // NVML_VALUE_NOT_AVAILABLE
constexpr unsigned long long kDcgmBlank = 0x7ffffffffffffff0ull;
[[maybe_unused]] constexpr unsigned int kNoInstance = 0xFFFFFFFF;

struct FakeProcess {
  unsigned int pid;
  unsigned long long memory;
};
struct FakeUtilSample {
  unsigned int pid;
  unsigned long long time_stamp;
  unsigned int sm_util;
};

struct FakeDevice {
  const char* name;
  const char* uuid;
  const char* bus_id;
  unsigned long long memory;
  unsigned long long used = 0;
  unsigned long long reserved = 0;
  int mig_mode = -1;  // -1 = not supported
  int gpu_instance_id = 0;
  unsigned int placement_start = 0;
  FakeDevice* mig[7] = {};
  bool is_mig = false;
  bool memory_v2 = true;
  unsigned int util_gpu = kUnsupported, util_mem = kUnsupported;
  int temperature = 0;  // nvmlDeviceGetTemperatureV; nvmlDeviceGetTemperature answers 1 less
  unsigned int slowdown = 0;
  unsigned int power_mw = 0, power_limit_mw = 0;
  unsigned int sm_clock = 0, mem_clock = 0;
  unsigned long long throttle = 0;
  unsigned long long ecc_corrected = kNotAvailable, ecc_uncorrected = kNotAvailable;
  unsigned int pcie_tx_kb = kUnsupported, pcie_rx_kb = kUnsupported;
  FakeProcess processes[3] = {};
  unsigned int process_count = 0;
  FakeUtilSample util_samples[4] = {};
  unsigned int util_sample_count = 0;
};

FakeDevice g_mig_3g{.name = "NVIDIA A100-SXM4-40GB MIG 3g.20gb",
                    .uuid = "MIG-00000000-1111-2222-3333-444444444444",
                    .bus_id = "",
                    .memory = 19968 * kMiB,
                    .used = 8192 * kMiB,
                    .reserved = 0,
                    .gpu_instance_id = 1,
                    .placement_start = 4,
                    .is_mig = true,
                    .processes = {{2001, kNotAvailable}},
                    .process_count = 1};
FakeDevice g_mig_1g{.name = "NVIDIA A100-SXM4-40GB",
                    .uuid = "MIG-55555555-6666-7777-8888-999999999999",
                    .bus_id = "",
                    .memory = 4864 * kMiB,
                    .gpu_instance_id = 2,
                    .is_mig = true};
FakeDevice g_gpus[3] = {
    {.name = "NVIDIA H100 80GB HBM3",
     .uuid = "GPU-11111111-2222-3333-4444-555555555555",
     .bus_id = "00000000:18:00.0",
     .memory = 81559 * kMiB,
     .used = 61440 * kMiB,
     .reserved = 512 * kMiB,
     .mig_mode = 0,
     .util_gpu = 97,
     .util_mem = 41,
     .temperature = 71,
     .slowdown = 87,
     .power_mw = 512345,
     .power_limit_mw = 700000,
     .sm_clock = 1980,
     .mem_clock = 2619,
     .throttle = 0x4,
     .ecc_corrected = 3,
     .ecc_uncorrected = 1,
     .pcie_tx_kb = 1500000,
     .pcie_rx_kb = 250000,
     .processes = {{1001, 40960 * kMiB}, {1002, 20480 * kMiB}},
     .process_count = 2,
     // 1002's only sample is bogus (>100%); 9999 is not a process of this GPU.
     .util_samples = {{1001, 100, 60}, {1001, 200, 65}, {1002, 150, 250}, {9999, 180, 10}},
     .util_sample_count = 4},
    {.name = "NVIDIA A100-SXM4-40GB",
     .uuid = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
     .bus_id = "00000000:3B:00.0",
     .memory = 40960 * kMiB,
     .used = 8192 * kMiB,
     .reserved = 256 * kMiB,
     .mig_mode = 1,
     .mig = {&g_mig_3g, nullptr, &g_mig_1g},
     .temperature = 2147483647,  // DCGM-style blank
     .slowdown = 88,
     .power_mw = 0xFFFFFFFF,  // NVML "not available"
     .power_limit_mw = 400000,
     .sm_clock = 1410,
     .mem_clock = 1215,
     .throttle = 0,
     .ecc_corrected = kDcgmBlank,
     .ecc_uncorrected = 0},
    {.name = "Tesla T4",
     .uuid = "GPU-12345678-9abc-def0-1234-56789abcdef0",
     .bus_id = "00000000:AF:00.0",
     .memory = 15360 * kMiB,
     .used = 1024 * kMiB,
     .reserved = 300 * kMiB,
     .memory_v2 = false,
     .util_gpu = 33,
     .util_mem = 255,  // above 100: a sentinel
     .temperature = 45,
     .slowdown = 93,
     .power_mw = 27500,
     .power_limit_mw = 70000,
     .sm_clock = 585,
     .mem_clock = 5000,
     .throttle = 0x1,
     .pcie_tx_kb = 100,
     .pcie_rx_kb = 200},
};

struct Memory {
  unsigned long long total, free, used;
};
struct MemoryV2 {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
struct Temperature {
  unsigned int version;
  int sensor_type;
  int temperature;
};
struct PciInfo {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct Utilization {
  unsigned int gpu, memory;
};
struct GpuInstanceInfo {
  void* device;
  unsigned int id, profile_id, placement_start, placement_size;
};
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long used;
};
struct ProcessInfoV2 {
  unsigned int pid;
  unsigned long long used;
  unsigned int gpu_instance_id, compute_instance_id;
};
struct ProcessInfoCc {
  unsigned int pid;
  unsigned long long used;
  unsigned int gpu_instance_id, compute_instance_id;
  unsigned long long cc_protected;
};
struct ProcessUtilization {
  unsigned int pid;
  unsigned long long time_stamp;
  unsigned int sm_util, mem_util, enc_util, dec_util;
};
struct EventData {
  void* device;
  unsigned long long event_type, event_data;
  unsigned int gpu_instance_id, compute_instance_id;
};

// One event set; its pending XID is re-armed by every init so each sampler sees it once.
struct FakeEventSet {
  bool registered[3] = {};
  bool xid_pending = true;
};
FakeEventSet g_events;

int copy_text(const char* text, char* out, unsigned int length) {
  if (std::strlen(text) + 1 > length) return kInvalidArgument;
  std::strcpy(out, text);
  return kSuccess;
}

FakeDevice* dev(void* handle) {
  return static_cast<FakeDevice*>(handle);
}

int init() {
  g_events = FakeEventSet{};
  return std::getenv("TY_FAKE_NVML_INIT_ERROR") ? kDriverNotLoaded : kSuccess;
}

int pci_info(void* h, PciInfo* pci) {
  if (dev(h)->is_mig) return kNotSupported;
  *pci = {};
  std::strcpy(pci->bus_id, dev(h)->bus_id);
  return kSuccess;
}

[[maybe_unused]] int uint_value(void* h, unsigned int value, unsigned int* out) {
  if (dev(h)->is_mig || value == kUnsupported) return kNotSupported;
  *out = value;
  return kSuccess;
}

// The two-call protocol of the running-process getters, for any of the three layouts.
template <typename Info>
int processes(void* h, unsigned int* count, Info* infos) {
  const FakeDevice& d = *dev(h);
  if (*count < d.process_count) {
    *count = d.process_count;
    return kInsufficientSize;
  }
  for (unsigned int i = 0; i < d.process_count; ++i) {
    infos[i] = {};
    infos[i].pid = d.processes[i].pid;
    infos[i].used = d.processes[i].memory;
  }
  *count = d.process_count;
  return kSuccess;
}

// How often a few costly entry points were called, for tests of how often the sampler reads.
std::map<std::string, unsigned long long> g_calls;

}  // namespace

extern "C" {

// Test hooks: ty_fake_nvml_count("name") counts a call, ty_fake_nvml_calls("name") reads it.
void ty_fake_nvml_count(const char* name) {
  ++g_calls[name];
}
unsigned long long ty_fake_nvml_calls(const char* name) {
  auto it = g_calls.find(name);
  return it == g_calls.end() ? 0 : it->second;
}

int nvmlInit_v2() {
  return init();
}
int nvmlShutdown() {
  return kSuccess;
}
const char* nvmlErrorString(int rc) {
  if (rc == kGpuIsLost) return "GPU is lost";
  return rc == kDriverNotLoaded ? "Driver Not Loaded" : "Fake Error";
}
int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (std::getenv("TY_FAKE_NVML_GPU_LOST")) return kGpuIsLost;
  *count = 3;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** handle) {
  if (index >= 3) return kInvalidArgument;
  *handle = &g_gpus[index];
  return kSuccess;
}
int nvmlDeviceGetName(void* h, char* name, unsigned int length) {
  return copy_text(dev(h)->name, name, length);
}
int nvmlDeviceGetUUID(void* h, char* uuid, unsigned int length) {
  return copy_text(dev(h)->uuid, uuid, length);
}
int nvmlDeviceGetMemoryInfo(void* h, Memory* memory) {
  const FakeDevice& d = *dev(h);
  // v1 counts reserved memory as used.
  *memory = {d.memory, d.memory - d.used - d.reserved, d.used + d.reserved};
  return kSuccess;
}
int nvmlDeviceGetMigMode(void* h, unsigned int* current, unsigned int* pending) {
  if (dev(h)->mig_mode < 0) return kNotSupported;
  *current = *pending = static_cast<unsigned int>(dev(h)->mig_mode);
  return kSuccess;
}
int nvmlDeviceGetMaxMigDeviceCount(void* h, unsigned int* count) {
  *count = dev(h)->mig_mode == 1 ? 7 : 0;
  return kSuccess;
}
int nvmlDeviceGetMigDeviceHandleByIndex(void* h, unsigned int index, void** mig) {
  if (index >= 7 || !dev(h)->mig[index]) return kNotFound;
  *mig = dev(h)->mig[index];
  return kSuccess;
}

// Older entry points that newer drivers still export; the sampler falls back on them.
int nvmlDeviceGetPciInfo_v2(void* h, PciInfo* pci) {
  return pci_info(h, pci);
}
int nvmlDeviceGetTemperature(void* h, unsigned int sensor, unsigned int* temperature) {
  if (sensor != 0 || dev(h)->is_mig) return kNotSupported;
  *temperature = static_cast<unsigned int>(dev(h)->temperature - 1);
  return kSuccess;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(void* h, unsigned long long* reasons) {
  if (dev(h)->is_mig) return kNotSupported;
  *reasons = dev(h)->throttle;
  return kSuccess;
}
int nvmlDeviceGetComputeRunningProcesses(void* h, unsigned int* count, ProcessInfoV1* infos) {
  return processes(h, count, infos);
}

#ifndef TY_FAKE_NVML_MINIMAL
int nvmlInitWithFlags(unsigned int flags) {
  return flags == 1 ? init() : kInvalidArgument;
}
int nvmlDeviceGetGpuInstanceId(void* mig, unsigned int* id) {
  *id = static_cast<unsigned int>(dev(mig)->gpu_instance_id);
  return kSuccess;
}
int nvmlDeviceGetGpuInstanceById(void* parent, unsigned int id, void** gpu_instance) {
  for (FakeDevice* m : dev(parent)->mig) {
    if (m && m->gpu_instance_id == static_cast<int>(id)) {
      *gpu_instance = m;
      return kSuccess;
    }
  }
  return kNotFound;
}
int nvmlGpuInstanceGetInfo(void* gpu_instance, GpuInstanceInfo* info) {
  *info = {nullptr, static_cast<unsigned int>(dev(gpu_instance)->gpu_instance_id), 0,
           dev(gpu_instance)->placement_start, 0};
  return kSuccess;
}
int nvmlDeviceGetPciInfo_v3(void* h, PciInfo* pci) {
  return pci_info(h, pci);
}
int nvmlDeviceGetMemoryInfo_v2(void* h, MemoryV2* memory) {
  const FakeDevice& d = *dev(h);
  if (!d.memory_v2) return kArgumentVersionMismatch;
  // NVML_STRUCT_VERSION(Memory, 2): the struct's size and the version in the top byte.
  if (memory->version != (sizeof(MemoryV2) | (2u << 24))) return kArgumentVersionMismatch;
  memory->total = d.memory;
  memory->reserved = d.reserved;
  memory->used = d.used;
  memory->free = d.memory - d.used - d.reserved;
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(void* h, Utilization* util) {
  const FakeDevice& d = *dev(h);
  if (d.is_mig || d.util_gpu == kUnsupported) return kNotSupported;
  *util = {d.util_gpu, d.util_mem};
  return kSuccess;
}
int nvmlDeviceGetTemperatureV(void* h, Temperature* t) {
  if (t->version != (sizeof(Temperature) | (1u << 24))) return kArgumentVersionMismatch;
  if (t->sensor_type != 0 || dev(h)->is_mig) return kNotSupported;
  t->temperature = dev(h)->temperature;
  return kSuccess;
}
int nvmlDeviceGetTemperatureThreshold(void* h, unsigned int type, unsigned int* t) {
  return type == 1 ? uint_value(h, dev(h)->slowdown, t) : kNotSupported;
}
int nvmlDeviceGetPowerUsage(void* h, unsigned int* mw) {
  return uint_value(h, dev(h)->power_mw, mw);
}
int nvmlDeviceGetEnforcedPowerLimit(void* h, unsigned int* mw) {
  return uint_value(h, dev(h)->power_limit_mw, mw);
}
int nvmlDeviceGetClockInfo(void* h, unsigned int type, unsigned int* mhz) {
  if (type == 1) return uint_value(h, dev(h)->sm_clock, mhz);
  if (type == 2) return uint_value(h, dev(h)->mem_clock, mhz);
  return kNotSupported;
}
int nvmlDeviceGetCurrentClocksEventReasons(void* h, unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksThrottleReasons(h, reasons);
}
int nvmlDeviceGetTotalEccErrors(void* h, unsigned int type, unsigned int counter,
                                unsigned long long* count) {
  const FakeDevice& d = *dev(h);
  unsigned long long volatile_count = type == 0 ? d.ecc_corrected : d.ecc_uncorrected;
  if (d.is_mig || volatile_count == kNotAvailable) return kNotSupported;
  // Aggregate counts differ from volatile ones so a test sees which was read.
  *count = counter == 0 ? volatile_count : volatile_count + 100;
  return kSuccess;
}
int nvmlDeviceGetPcieThroughput(void* h, unsigned int counter, unsigned int* kb_per_s) {
  ty_fake_nvml_count("nvmlDeviceGetPcieThroughput");
  return uint_value(h, counter == 0 ? dev(h)->pcie_tx_kb : dev(h)->pcie_rx_kb, kb_per_s);
}
int nvmlDeviceGetComputeRunningProcesses_v2(void* h, unsigned int* count, ProcessInfoV2* infos) {
  return processes(h, count, infos);
}
#ifdef TY_FAKE_NVML_CC_PROCESS
int nvmlDeviceGetComputeRunningProcesses_v3(void* h, unsigned int* count, ProcessInfoCc* infos) {
  return processes(h, count, infos);
}
int nvmlDeviceGetConfComputeMemSizeInfo(void*, void*) {
  return kNotSupported;
}
#else
int nvmlDeviceGetComputeRunningProcesses_v3(void* h, unsigned int* count, ProcessInfoV2* infos) {
  return processes(h, count, infos);
}
int nvmlDeviceGetConfComputeMemSizeInfo(void*, void*) {
  return kNotSupported;
}
int nvmlDeviceGetRunningProcessDetailList(void*, void*) {
  return kNotSupported;
}
#endif
// Samples newer than `last_seen`; NOT_FOUND when there are none, as a real driver answers.
int nvmlDeviceGetProcessUtilization(void* h, ProcessUtilization* samples, unsigned int* count,
                                    unsigned long long last_seen) {
  ty_fake_nvml_count("nvmlDeviceGetProcessUtilization");
  const FakeDevice& d = *dev(h);
  if (d.is_mig) return kNotSupported;
  unsigned int fresh = 0;
  for (unsigned int i = 0; i < d.util_sample_count; ++i) {
    if (d.util_samples[i].time_stamp > last_seen) ++fresh;
  }
  if (fresh == 0) return kNotFound;
  if (!samples || *count < fresh) {
    *count = fresh;
    return kInsufficientSize;
  }
  unsigned int n = 0;
  for (unsigned int i = 0; i < d.util_sample_count; ++i) {
    const FakeUtilSample& s = d.util_samples[i];
    if (s.time_stamp > last_seen) samples[n++] = {s.pid, s.time_stamp, s.sm_util, 0, 0, 0};
  }
  *count = n;
  return kSuccess;
}
int nvmlEventSetCreate(void** set) {
  *set = &g_events;
  return kSuccess;
}
int nvmlEventSetFree(void*) {
  return kSuccess;
}
int nvmlDeviceRegisterEvents(void* h, unsigned long long types, void* set) {
  if (dev(h)->is_mig || types != 0x8) return kNotSupported;
  auto* events = static_cast<FakeEventSet*>(set);
  events->registered[dev(h) - g_gpus] = true;
  return kSuccess;
}
int nvmlEventSetWait_v2(void* set, EventData* data, unsigned int) {
  auto* events = static_cast<FakeEventSet*>(set);
  if (!events->xid_pending || !events->registered[0]) return kTimeout;
  events->xid_pending = false;
  *data = {&g_gpus[0], 0x8, 79, kNoInstance, kNoInstance};
  return kSuccess;
}
#endif  // TY_FAKE_NVML_MINIMAL

}  // extern "C"
