// The fake NVML's newer entry points (part of the default fake library, absent from the minimal
// one): energy, PCIe replays, violation times, remapped rows, field values (memory temperature,
// NVLink byte counters) and GPM. Devices are told apart by UUID, as in fake_nvml.cc:
// GPU 0 (H100) reports all of them, GPM included; its NVLink counters grow by a fixed amount on
//   every read, so a rate follows from the time between two samples.
// GPU 1 (A100) has no GPM (the support query says so), no memory sensor or NVLink counters, and
//   a failed row remapping; its PCIe byte counters grow by a fixed amount on every read (and
//   it has no nvmlDeviceGetPcieThroughput).
// GPU 2 (T4) has no GPM (every GPM call fails), an energy counter, and answers 0 for memory
//   temperature (no sensor).
#include <cstring>

extern "C" int nvmlDeviceGetUUID(void* h, char* uuid, unsigned int length);  // fake_nvml.cc
extern "C" void ty_fake_nvml_count(const char* name);                        // fake_nvml.cc

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr unsigned int kScopeAllLinks = 0xFFFFFFFF;
constexpr unsigned long long kNvlinkTxKibPerRead = 4096;
constexpr unsigned long long kNvlinkRxKibPerRead = 2048;
constexpr unsigned long long kPcieTxBytesPerRead = 3'000'000;
constexpr unsigned long long kPcieRxBytesPerRead = 1'000'000;

struct ViolationTime {
  unsigned long long reference_time, violation_time;
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
  unsigned int field_id, scope_id;
  long long timestamp, latency;
  int value_type, nvml_return;
  Value value;
};
struct GpmMetric {
  unsigned int metric_id;
  int nvml_return;
  double value;
  char *short_name, *long_name, *unit;
};
struct GpmMetricsGet {
  unsigned int version, num_metrics;
  void *sample1, *sample2;
  GpmMetric metrics[98];
};
struct GpmSupport {
  unsigned int version, is_supported_device;
};

// Which of the three GPUs (0, 1, 2) a handle is; -1 for MIG devices and unknown handles.
int gpu_of(void* h) {
  char uuid[96] = {};
  if (nvmlDeviceGetUUID(h, uuid, sizeof(uuid)) != kSuccess) return -1;
  if (std::strcmp(uuid, "GPU-11111111-2222-3333-4444-555555555555") == 0) return 0;
  if (std::strcmp(uuid, "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee") == 0) return 1;
  if (std::strcmp(uuid, "GPU-12345678-9abc-def0-1234-56789abcdef0") == 0) return 2;
  return -1;
}

unsigned long long g_nvlink_reads = 0;
unsigned long long g_pcie_reads = 0;

struct FakeGpmSample {
  bool in_use = false;
  void* device = nullptr;
  bool taken = false;
};
FakeGpmSample g_gpm_samples[8];  // freed buffers are reused, so many samplers can run

}  // namespace

extern "C" {

int nvmlDeviceGetTotalEnergyConsumption(void* h, unsigned long long* mj) {
  ty_fake_nvml_count("nvmlDeviceGetTotalEnergyConsumption");
  const int gpu = gpu_of(h);
  if (gpu == 0)
    *mj = 123456789;
  else if (gpu == 2)
    *mj = 5000;
  else
    return kNotSupported;
  return kSuccess;
}
int nvmlDeviceGetPcieReplayCounter(void* h, unsigned int* count) {
  const int gpu = gpu_of(h);
  if (gpu == 2 || gpu < 0) return kNotSupported;
  *count = gpu == 0 ? 4 : 0;
  return kSuccess;
}
// Nanoseconds: GPU 0 answers policy p with (p + 1) ms plus 7 ns, so each policy's value differs.
int nvmlDeviceGetViolationStatus(void* h, unsigned int policy, ViolationTime* v) {
  ty_fake_nvml_count("nvmlDeviceGetViolationStatus");
  const int gpu = gpu_of(h);
  if (gpu != 0 && gpu != 2) return kNotSupported;
  if (policy > 5 && policy != 10 && policy != 11) return kInvalidArgument;
  if (gpu == 2 && policy != 0) return kNotSupported;
  v->reference_time = 1;
  v->violation_time = (policy + 1) * 1'000'000ull + 7;
  return kSuccess;
}
int nvmlDeviceGetRemappedRows(void* h, unsigned int* corrected, unsigned int* uncorrected,
                              unsigned int* pending, unsigned int* failed) {
  const int gpu = gpu_of(h);
  if (gpu != 0 && gpu != 1) return kNotSupported;
  *corrected = gpu == 0 ? 2 : 0;
  *uncorrected = gpu == 0 ? 1 : 0;
  *pending = 0;
  *failed = gpu == 1 ? 1 : 0;
  return kSuccess;
}
int nvmlDeviceGetFieldValues(void* h, int count, FieldValue* values) {
  const int gpu = gpu_of(h);
  if (gpu < 0) return kNotSupported;
  for (int i = 0; i < count; ++i) {
    FieldValue& f = values[i];
    f.nvml_return = kNotSupported;
    if (f.field_id == 82 && gpu != 1) {  // memory temperature: a sint; the T4 has no sensor
      f.nvml_return = kSuccess;
      f.value_type = 5;
      f.value.si = gpu == 0 ? 78 : 0;
    } else if ((f.field_id == 138 || f.field_id == 139) && gpu == 0 &&
               f.scope_id == kScopeAllLinks) {
      if (f.field_id == 138) ++g_nvlink_reads;
      f.nvml_return = kSuccess;
      f.value_type = 3;
      f.value.ull =
          g_nvlink_reads * (f.field_id == 138 ? kNvlinkTxKibPerRead : kNvlinkRxKibPerRead);
    } else if ((f.field_id == 197 || f.field_id == 198) && gpu == 1) {  // PCIe bytes
      if (f.field_id == 197) ++g_pcie_reads;
      f.nvml_return = kSuccess;
      f.value_type = 3;
      f.value.ull = g_pcie_reads * (f.field_id == 197 ? kPcieTxBytesPerRead : kPcieRxBytesPerRead);
    }
  }
  return kSuccess;
}
int nvmlGpmQueryDeviceSupport(void* h, GpmSupport* support) {
  const int gpu = gpu_of(h);
  if (support->version != 1) return kInvalidArgument;
  if (gpu == 2) return kNotSupported;
  support->is_supported_device = gpu == 0 ? 1 : 0;
  return kSuccess;
}
int nvmlGpmSampleAlloc(void** sample) {
  for (FakeGpmSample& s : g_gpm_samples) {
    if (s.in_use) continue;
    s = {.in_use = true};
    *sample = &s;
    return kSuccess;
  }
  return kInvalidArgument;
}
int nvmlGpmSampleFree(void* sample) {
  static_cast<FakeGpmSample*>(sample)->in_use = false;
  return kSuccess;
}
int nvmlGpmSampleGet(void* h, void* sample) {
  if (gpu_of(h) != 0) return kNotSupported;
  auto* s = static_cast<FakeGpmSample*>(sample);
  s->device = h;
  s->taken = true;
  return kSuccess;
}
// Graphics 88.5%, SM 71.25%, any tensor 43.5%, DRAM 37.75%; other metrics are unsupported.
int nvmlGpmMetricsGet(GpmMetricsGet* get) {
  auto* a = static_cast<FakeGpmSample*>(get->sample1);
  auto* b = static_cast<FakeGpmSample*>(get->sample2);
  if (get->version != 1 || get->num_metrics > 98 || !a || !b || a == b || !a->taken || !b->taken ||
      a->device != b->device)
    return kInvalidArgument;
  for (unsigned int i = 0; i < get->num_metrics; ++i) {
    GpmMetric& m = get->metrics[i];
    m.nvml_return = kSuccess;
    switch (m.metric_id) {
      case 1:
        m.value = 88.5;
        break;
      case 2:
        m.value = 71.25;
        break;
      case 5:
        m.value = 43.5;
        break;
      case 10:
        m.value = 37.75;
        break;
      default:
        m.nvml_return = kNotSupported;
    }
  }
  return kSuccess;
}

}  // extern "C"
