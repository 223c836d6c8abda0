// A stand-in for libnvidia-ml.so with three GPUs, so the NVML sampler's real code path (dlopen,
// symbol lookup, device and MIG enumeration) runs in tests on machines without a driver.
// GPU 0: H100 80GB, MIG off. GPU 1: A100 40GB, MIG on, instances in slots 0 and 2 (slot 1
// empty). GPU 2: T4, no MIG support. TY_FAKE_NVML_INIT_ERROR makes nvmlInit_v2 fail.
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kNotFound = 6;
constexpr int kDriverNotLoaded = 9;
constexpr unsigned long long kMiB = 1ull << 20;

struct FakeDevice {
  const char* name;
  const char* uuid;
  unsigned long long memory;
  int mig_mode;  // -1 = not supported
  int gpu_instance_id;
  unsigned int placement_start;
  FakeDevice* mig[7];
};

FakeDevice g_mig_3g{"NVIDIA A100-SXM4-40GB MIG 3g.20gb",
                    "MIG-00000000-1111-2222-3333-444444444444",
                    19968 * kMiB,
                    -1,
                    1,
                    4,
                    {}};
FakeDevice g_mig_1g{
    "NVIDIA A100-SXM4-40GB", "MIG-55555555-6666-7777-8888-999999999999", 4864 * kMiB, -1, 2, 0, {}};
FakeDevice g_gpus[3] = {
    {"NVIDIA H100 80GB HBM3",
     "GPU-11111111-2222-3333-4444-555555555555",
     81559 * kMiB,
     0,
     0,
     0,
     {}},
    {"NVIDIA A100-SXM4-40GB",
     "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
     40960 * kMiB,
     1,
     0,
     0,
     {&g_mig_3g, nullptr, &g_mig_1g}},
    {"Tesla T4", "GPU-12345678-9abc-def0-1234-56789abcdef0", 15360 * kMiB, -1, 0, 0, {}},
};

struct Memory {
  unsigned long long total, free, used;
};
struct GpuInstanceInfo {
  void* device;
  unsigned int id, profile_id, placement_start, placement_size;
};

int copy_text(const char* text, char* out, unsigned int length) {
  if (std::strlen(text) + 1 > length) return kInvalidArgument;
  std::strcpy(out, text);
  return kSuccess;
}

FakeDevice* dev(void* handle) {
  return static_cast<FakeDevice*>(handle);
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  return std::getenv("TY_FAKE_NVML_INIT_ERROR") ? kDriverNotLoaded : kSuccess;
}
int nvmlShutdown() {
  return kSuccess;
}
const char* nvmlErrorString(int rc) {
  return rc == kDriverNotLoaded ? "Driver Not Loaded" : "Fake Error";
}
int nvmlDeviceGetCount_v2(unsigned int* count) {
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
  *memory = {dev(h)->memory, dev(h)->memory, 0};
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

}  // extern "C"
