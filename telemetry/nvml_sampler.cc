// GPUs through NVIDIA's management library, loaded with dlopen so that trainyard builds and runs
// without the driver. The only place that touches NVML. The few NVML types used are declared
// here (ABI-stable since the v2 entry points, R450+), so no NVIDIA header is needed to build.
#include <dlfcn.h>

#include <array>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "telemetry/driver_name.h"
#include "telemetry/gpu_sampler.h"

namespace trainyard::telemetry {
namespace {

using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
using NvmlGpuInstance = struct NvmlGpuInstanceOpaque*;
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlGpuInstanceInfo {
  NvmlDevice device;
  unsigned int id;
  unsigned int profile_id;
  unsigned int placement_start;
  unsigned int placement_size;
  unsigned int spare[16];  // room in case a driver's struct has grown
};

constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned int kNvmlMigEnabled = 1;
constexpr unsigned int kNvmlStringSize = 96;  // NVML_DEVICE_{NAME,UUID}_V2_BUFFER_SIZE
constexpr std::string_view kSimHint = "use --gpus sim:4xH100-80GB to simulate GPUs";

struct NvmlApi {
  void* library = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*get_count)(unsigned int*) = nullptr;
  NvmlReturn (*get_handle)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*get_name)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*get_uuid)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*get_memory)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*get_mig_mode)(NvmlDevice, unsigned int*, unsigned int*) = nullptr;
  NvmlReturn (*get_max_mig_count)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*get_mig_handle)(NvmlDevice, unsigned int, NvmlDevice*) = nullptr;
  // Optional (placement of MIG instances); a MigInstance's start stays 0 without them.
  NvmlReturn (*get_gpu_instance_id)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*get_gpu_instance_by_id)(NvmlDevice, unsigned int, NvmlGpuInstance*) = nullptr;
  NvmlReturn (*get_gpu_instance_info)(NvmlGpuInstance, NvmlGpuInstanceInfo*) = nullptr;
};

template <typename Fn>
bool bind(void* library, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  return fn != nullptr;
}

// Resolves every entry point; returns the first required one that is missing, or nullptr.
const char* bind_all(NvmlApi& api) {
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
  bind(lib, "nvmlDeviceGetGpuInstanceId", api.get_gpu_instance_id);
  bind(lib, "nvmlDeviceGetGpuInstanceById", api.get_gpu_instance_by_id);
  bind(lib, "nvmlGpuInstanceGetInfo", api.get_gpu_instance_info);
  return nullptr;
}

class NvmlSampler final : public GpuSampler {
 public:
  explicit NvmlSampler(NvmlApi api) : api_(api) {}
  ~NvmlSampler() override {
    api_.shutdown();
    dlclose(api_.library);
  }
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  util::Result<std::vector<GpuDevice>> devices() override {
    std::lock_guard lock(mu_);
    unsigned int count = 0;
    TY_RETURN_IF_ERROR(check(api_.get_count(&count), "nvmlDeviceGetCount_v2", -1));
    std::vector<GpuDevice> out;
    for (unsigned int i = 0; i < count; ++i) {
      TY_ASSIGN_OR_RETURN(GpuDevice d, device(i));
      out.push_back(std::move(d));
    }
    return out;
  }
  util::Result<std::vector<GpuSample>> sample(int64_t now_ms) override {
    TY_ASSIGN_OR_RETURN(auto devs, devices());
    std::vector<GpuSample> out;
    for (const auto& d : devs) {
      GpuSample s;
      s.time_ms = now_ms;
      s.index = d.index;
      s.uuid = d.uuid;
      s.name = d.name;
      s.model = d.model;
      s.memory_total_bytes = static_cast<uint64_t>(d.memory.value());
      out.push_back(std::move(s));
    }
    return out;
  }
  std::string_view kind() const override { return "nvml"; }

 private:
  std::string error_text(NvmlReturn rc) const {
    const char* s = api_.error_string(rc);
    return s ? fmt::format("{} ({})", s, rc) : fmt::format("error {}", rc);
  }

  util::Status check(NvmlReturn rc, std::string_view call, int gpu) const {
    if (rc == kNvmlSuccess) return util::Status::ok();
    std::string where = gpu >= 0 ? fmt::format(" for GPU {}", gpu) : "";
    return util::unavailable(fmt::format("NVML: {}{} failed: {} (check the driver with nvidia-smi)",
                                         call, where, error_text(rc)));
  }

  // Calls an NVML getter that fills a char buffer.
  template <typename Getter>
  util::Result<std::string> text(Getter getter, NvmlDevice h, std::string_view call, int gpu) {
    std::array<char, kNvmlStringSize> buf{};
    TY_RETURN_IF_ERROR(check(getter(h, buf.data(), kNvmlStringSize), call, gpu));
    buf.back() = '\0';
    return std::string(buf.data());
  }

  util::Result<GpuDevice> device(unsigned int i) {  // requires mu_
    int gpu = static_cast<int>(i);
    NvmlDevice h = nullptr;
    TY_RETURN_IF_ERROR(check(api_.get_handle(i, &h), "nvmlDeviceGetHandleByIndex_v2", gpu));
    GpuDevice d;
    d.index = gpu;
    TY_ASSIGN_OR_RETURN(d.name, text(api_.get_name, h, "nvmlDeviceGetName", gpu));
    TY_ASSIGN_OR_RETURN(d.uuid, text(api_.get_uuid, h, "nvmlDeviceGetUUID", gpu));
    NvmlMemory mem{};
    TY_RETURN_IF_ERROR(check(api_.get_memory(h, &mem), "nvmlDeviceGetMemoryInfo", gpu));
    d.memory = model::Bytes(static_cast<int64_t>(mem.total));
    d.model = model_from_driver_name(d.name, d.memory);
    unsigned int current = 0;
    unsigned int pending = 0;
    // GPUs without MIG answer NOT_SUPPORTED: that is simply "MIG off".
    d.mig_enabled =
        api_.get_mig_mode(h, &current, &pending) == kNvmlSuccess && current == kNvmlMigEnabled;
    if (d.mig_enabled) {
      TY_ASSIGN_OR_RETURN(d.mig_instances, mig_instances(h, d.model, gpu));
    }
    return d;
  }

  util::Result<std::vector<MigInstance>> mig_instances(NvmlDevice parent,
                                                       std::string_view parent_model, int gpu) {
    unsigned int max = 0;
    TY_RETURN_IF_ERROR(
        check(api_.get_max_mig_count(parent, &max), "nvmlDeviceGetMaxMigDeviceCount", gpu));
    std::vector<MigInstance> out;
    for (unsigned int slot = 0; slot < max; ++slot) {
      NvmlDevice h = nullptr;
      if (api_.get_mig_handle(parent, slot, &h) != kNvmlSuccess) continue;  // empty slot
      MigInstance m;
      TY_ASSIGN_OR_RETURN(m.uuid, text(api_.get_uuid, h, "nvmlDeviceGetUUID (MIG)", gpu));
      auto name = text(api_.get_name, h, "nvmlDeviceGetName (MIG)", gpu);
      NvmlMemory mem{};
      model::Bytes memory(0);
      if (api_.get_memory(h, &mem) == kNvmlSuccess) {
        memory = model::Bytes(static_cast<int64_t>(mem.total));
      }
      m.profile = mig_profile_from_driver_name(name.is_ok() ? *name : "", parent_model, memory);
      m.start = placement_start(parent, h);
      out.push_back(std::move(m));
    }
    return out;
  }

  // First memory slice of a MIG instance, or 0 when this driver cannot say.
  int placement_start(NvmlDevice parent, NvmlDevice mig) {
    if (!api_.get_gpu_instance_id || !api_.get_gpu_instance_by_id || !api_.get_gpu_instance_info) {
      return 0;
    }
    unsigned int id = 0;
    NvmlGpuInstance gi = nullptr;
    NvmlGpuInstanceInfo info{};
    if (api_.get_gpu_instance_id(mig, &id) != kNvmlSuccess ||
        api_.get_gpu_instance_by_id(parent, id, &gi) != kNvmlSuccess ||
        api_.get_gpu_instance_info(gi, &info) != kNvmlSuccess) {
      return 0;
    }
    return static_cast<int>(info.placement_start);
  }

  std::mutex mu_;  // serializes NVML calls; api_ itself is set once at construction
  const NvmlApi api_;
};

util::Result<GpuSamplerPtr> load_nvml(std::initializer_list<const char*> paths) {
  NvmlApi api;
  const char* loaded = nullptr;
  for (const char* path : paths) {
    api.library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (api.library) {
      loaded = path;
      break;
    }
  }
  if (!api.library) {
    return util::unavailable(fmt::format(
        "NVML not found ({}): no NVIDIA driver on this machine; {}", *paths.begin(), kSimHint));
  }
  if (const char* missing = bind_all(api)) {
    dlclose(api.library);
    return util::unavailable(fmt::format(
        "NVML at {} lacks {}: the NVIDIA driver is too old (R450 or newer is needed); {}", loaded,
        missing, kSimHint));
  }
  if (NvmlReturn rc = api.init(); rc != kNvmlSuccess) {
    std::string reason = api.error_string(rc) ? api.error_string(rc) : "unknown error";
    dlclose(api.library);
    return util::unavailable(fmt::format(
        "NVML failed to initialize: {} (check the driver with nvidia-smi); {}", reason, kSimHint));
  }
  return GpuSamplerPtr(std::make_unique<NvmlSampler>(api));
}

}  // namespace

util::Result<GpuSamplerPtr> make_nvml_sampler() {
  return load_nvml({"libnvidia-ml.so.1", "libnvidia-ml.so"});
}

util::Result<GpuSamplerPtr> make_nvml_sampler_for_test(const std::string& library_path) {
  return load_nvml({library_path.c_str()});
}

}  // namespace trainyard::telemetry
