// GPUs through NVIDIA's management library, loaded with dlopen so that trainyard builds and runs
// without the driver. The only place that opens NVML; its ABI is declared in nvml_api.h and the
// per-device readings live in nvml_readings.cc. One mutex serializes every NVML call.
#include <dlfcn.h>

#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "telemetry/driver_name.h"
#include "telemetry/gpu_sampler.h"
#include "telemetry/nvml_api.h"
#include "telemetry/nvml_interval.h"
#include "telemetry/nvml_readings.h"
#include "util/thread_annotations.h"

namespace trainyard::telemetry {
namespace {

constexpr std::string_view kSimHint = "use --gpus sim:4xH100-80GB to simulate GPUs";
constexpr int kMaxEventsPerSample = 64;  // bounds one sample's work if a GPU floods XIDs
constexpr auto kCostlyPeriod = std::chrono::seconds(10);  // see NvmlSampler::read_costly

struct PhysicalGpu {
  nvml::Device handle = nullptr;
  int index = 0;
  std::string uuid;
  std::string name;
};

struct XidState {
  std::optional<int> last;
  uint64_t count = 0;
};

class NvmlSampler final : public GpuSampler {
 public:
  explicit NvmlSampler(nvml::Api api) : api_(api), interval_(api_) {}
  ~NvmlSampler() override {
    interval_.release();
    if (events_ && api_.event_set_free) api_.event_set_free(events_);
    api_.shutdown();
    dlclose(api_.library);
  }
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  util::Result<std::vector<GpuDevice>> devices() override TY_EXCLUDES(mu_) {
    util::MutexLock lock(mu_);
    unsigned int count = 0;
    TY_RETURN_IF_ERROR(check(api_.get_count(&count), "nvmlDeviceGetCount_v2", -1));
    std::vector<GpuDevice> out;
    for (unsigned int i = 0; i < count; ++i) {
      TY_ASSIGN_OR_RETURN(GpuDevice d, device(i));
      out.push_back(std::move(d));
    }
    return out;
  }

  // Errors only when the GPUs cannot be listed; any single reading that fails stays nullopt.
  util::Result<std::vector<GpuSample>> sample(util::Time now) override TY_EXCLUDES(mu_) {
    util::MutexLock lock(mu_);
    TY_ASSIGN_OR_RETURN(std::vector<PhysicalGpu> gpus, physical_gpus());
    watch_xids(gpus);
    poll_xids(gpus);
    std::vector<GpuSample> out;
    for (const PhysicalGpu& gpu : gpus) append_samples(gpu, now, out);
    return out;
  }

  std::string_view kind() const override { return "nvml"; }

 private:
  std::string error_text(nvml::Return rc) const {
    const char* s = api_.error_string(rc);
    return s ? fmt::format("{} ({})", s, rc) : fmt::format("error {}", rc);
  }

  util::Status check(nvml::Return rc, std::string_view call, int gpu) const {
    if (rc == nvml::kSuccess) return util::Status::ok();
    std::string where = gpu >= 0 ? fmt::format(" for GPU {}", gpu) : "";
    return util::unavailable(fmt::format("NVML: {}{} failed: {} (check the driver with nvidia-smi)",
                                         call, where, error_text(rc)));
  }

  // Calls an NVML getter that fills a char buffer.
  template <typename Getter>
  util::Result<std::string> text(Getter getter, nvml::Device h, std::string_view call, int gpu)
      TY_REQUIRES(mu_) {
    std::array<char, nvml::kStringSize> buf{};
    TY_RETURN_IF_ERROR(check(getter(h, buf.data(), nvml::kStringSize), call, gpu));
    buf.back() = '\0';
    return std::string(buf.data());
  }

  bool mig_enabled(nvml::Device h) const TY_REQUIRES(mu_) {
    unsigned int current = 0;
    unsigned int pending = 0;
    // GPUs without MIG answer NOT_SUPPORTED: that is simply "MIG off".
    return api_.get_mig_mode(h, &current, &pending) == nvml::kSuccess &&
           current == nvml::kMigEnabled;
  }

  util::Result<GpuDevice> device(unsigned int i) TY_REQUIRES(mu_) {
    int gpu = static_cast<int>(i);
    nvml::Device h = nullptr;
    TY_RETURN_IF_ERROR(check(api_.get_handle(i, &h), "nvmlDeviceGetHandleByIndex_v2", gpu));
    GpuDevice d;
    d.index = gpu;
    TY_ASSIGN_OR_RETURN(d.name, text(api_.get_name, h, "nvmlDeviceGetName", gpu));
    TY_ASSIGN_OR_RETURN(d.uuid, text(api_.get_uuid, h, "nvmlDeviceGetUUID", gpu));
    nvml::Memory mem{};
    TY_RETURN_IF_ERROR(check(api_.get_memory(h, &mem), "nvmlDeviceGetMemoryInfo", gpu));
    d.memory = model::Bytes(static_cast<int64_t>(mem.total));
    d.model = model_from_driver_name(d.name, d.memory);
    d.mig_enabled = mig_enabled(h);
    if (d.mig_enabled) {
      TY_ASSIGN_OR_RETURN(d.mig_instances, mig_instances(h, d.model, gpu));
    }
    return d;
  }

  util::Result<std::vector<MigInstance>> mig_instances(nvml::Device parent,
                                                       std::string_view parent_model, int gpu)
      TY_REQUIRES(mu_) {
    unsigned int max = 0;
    TY_RETURN_IF_ERROR(
        check(api_.get_max_mig_count(parent, &max), "nvmlDeviceGetMaxMigDeviceCount", gpu));
    std::vector<MigInstance> out;
    for (unsigned int slot = 0; slot < max; ++slot) {
      nvml::Device h = nullptr;
      if (api_.get_mig_handle(parent, slot, &h) != nvml::kSuccess) continue;  // empty slot
      MigInstance m;
      TY_ASSIGN_OR_RETURN(m.uuid, text(api_.get_uuid, h, "nvmlDeviceGetUUID (MIG)", gpu));
      auto name = text(api_.get_name, h, "nvmlDeviceGetName (MIG)", gpu);
      nvml::Memory mem{};
      model::Bytes memory(0);
      if (api_.get_memory(h, &mem) == nvml::kSuccess) {
        memory = model::Bytes(static_cast<int64_t>(mem.total));
      }
      m.profile = mig_profile_from_driver_name(name.is_ok() ? *name : "", parent_model, memory);
      m.start = placement_start(parent, h);
      out.push_back(std::move(m));
    }
    return out;
  }

  // First memory slice of a MIG instance, or 0 when this driver cannot say.
  int placement_start(nvml::Device parent, nvml::Device mig) TY_REQUIRES(mu_) {
    if (!api_.get_gpu_instance_id || !api_.get_gpu_instance_by_id || !api_.get_gpu_instance_info) {
      return 0;
    }
    unsigned int id = 0;
    nvml::GpuInstance gi = nullptr;
    nvml::GpuInstanceInfo info{};
    if (api_.get_gpu_instance_id(mig, &id) != nvml::kSuccess ||
        api_.get_gpu_instance_by_id(parent, id, &gi) != nvml::kSuccess ||
        api_.get_gpu_instance_info(gi, &info) != nvml::kSuccess) {
      return 0;
    }
    return static_cast<int>(info.placement_start);
  }

  // The device list: a GPU that cannot be named by handle and UUID fails the whole sample,
  // since readings that cannot be attributed to a GPU are worse than none.
  util::Result<std::vector<PhysicalGpu>> physical_gpus() TY_REQUIRES(mu_) {
    unsigned int count = 0;
    TY_RETURN_IF_ERROR(check(api_.get_count(&count), "nvmlDeviceGetCount_v2", -1));
    std::vector<PhysicalGpu> gpus;
    for (unsigned int i = 0; i < count; ++i) {
      PhysicalGpu gpu;
      gpu.index = static_cast<int>(i);
      TY_RETURN_IF_ERROR(
          check(api_.get_handle(i, &gpu.handle), "nvmlDeviceGetHandleByIndex_v2", gpu.index));
      TY_ASSIGN_OR_RETURN(gpu.uuid,
                          text(api_.get_uuid, gpu.handle, "nvmlDeviceGetUUID", gpu.index));
      auto name = text(api_.get_name, gpu.handle, "nvmlDeviceGetName", gpu.index);
      gpu.name = name.is_ok() ? *name : "";
      gpus.push_back(std::move(gpu));
    }
    return gpus;
  }

  void append_samples(const PhysicalGpu& gpu, util::Time now, std::vector<GpuSample>& out)
      TY_REQUIRES(mu_) {
    GpuSample s;
    s.time = now;
    s.index = gpu.index;
    s.uuid = gpu.uuid;
    s.name = gpu.name;
    s.pci_bus_id = nvml::read_pci_bus_id(api_, gpu.handle);
    auto memory = nvml::read_memory(api_, gpu.handle);
    if (memory) {
      s.memory_total_bytes = memory->total;
      s.memory_used_bytes = memory->used;
    }
    s.model = model_from_driver_name(
        gpu.name, model::Bytes(memory ? static_cast<int64_t>(memory->total) : 0));
    nvml::read_gpu_fields(api_, gpu.handle, s);
    nvml::read_counter_fields(api_, gpu.handle, s);
    interval_.read(gpu.handle, gpu.uuid, now, s);
    read_costly(gpu, now, s);
    s.processes = nvml::read_processes(api_, gpu.handle);
    // Costs ~2.7 ms of CPU even when it finds nothing (H100, driver 580): only with processes.
    if (!s.processes.empty()) {
      nvml::read_process_utilization(api_, gpu.handle, last_seen_us_[gpu.uuid], s.processes);
    }
    set_xid_fields(gpu.uuid, gpu.uuid, s);
    bool mig = mig_enabled(gpu.handle);
    std::string parent_model = s.model;
    std::string parent_pci = s.pci_bus_id;
    out.push_back(std::move(s));
    if (mig) append_mig_samples(gpu, parent_model, parent_pci, now, out);
  }

  // Energy, PCIe replays and violation times are counters whose reads cost the driver
  // milliseconds, and nvmlDeviceGetPcieThroughput (where the driver has no PCIe byte counters)
  // blocks ~21 ms per direction: all of a sampler's cost on a real GPU, 15.8 ms of CPU and 56 ms
  // per sample on an H100 before this. They are read every kCostlyPeriod; the samples between
  // report the last values read (counters a few seconds old; the PCIe rate of the last read).
  void read_costly(const PhysicalGpu& gpu, util::Time now, GpuSample& s) TY_REQUIRES(mu_) {
    Held& held = held_[gpu.uuid];
    const bool counted_pcie = interval_.has_pcie_counters(gpu.uuid);
    if (!held.read_at || now - *held.read_at >= kCostlyPeriod || now < *held.read_at) {
      held.values = GpuSample{};
      nvml::read_costly_counters(api_, gpu.handle, held.values);
      if (!counted_pcie) nvml::read_pcie_throughput(api_, gpu.handle, held.values);
      held.read_at = now;
    }
    const GpuSample& v = held.values;
    s.energy_mj = v.energy_mj;
    s.pcie_replay_count = v.pcie_replay_count;
    s.violation_power_us = v.violation_power_us;
    s.violation_thermal_us = v.violation_thermal_us;
    s.violation_sync_boost_us = v.violation_sync_boost_us;
    s.violation_board_limit_us = v.violation_board_limit_us;
    s.violation_low_util_us = v.violation_low_util_us;
    s.violation_reliability_us = v.violation_reliability_us;
    if (!counted_pcie) {
      s.pcie_tx_bytes_per_s = v.pcie_tx_bytes_per_s;
      s.pcie_rx_bytes_per_s = v.pcie_rx_bytes_per_s;
    }
  }

  // MIG devices report memory and processes; utilization, temperature, power, clocks and the
  // rest are the parent GPU's, which NVML reports only on the parent.
  void append_mig_samples(const PhysicalGpu& gpu, const std::string& parent_model,
                          const std::string& parent_pci, util::Time now,
                          std::vector<GpuSample>& out) TY_REQUIRES(mu_) {
    unsigned int max = 0;
    if (api_.get_max_mig_count(gpu.handle, &max) != nvml::kSuccess) return;
    for (unsigned int slot = 0; slot < max; ++slot) {
      nvml::Device h = nullptr;
      if (api_.get_mig_handle(gpu.handle, slot, &h) != nvml::kSuccess) continue;  // empty slot
      auto uuid = text(api_.get_uuid, h, "nvmlDeviceGetUUID (MIG)", gpu.index);
      if (!uuid.is_ok()) continue;
      GpuSample m;
      m.time = now;
      m.index = gpu.index;
      m.uuid = *uuid;
      auto name = text(api_.get_name, h, "nvmlDeviceGetName (MIG)", gpu.index);
      m.name = name.is_ok() ? *name : "";
      m.model = parent_model;
      m.pci_bus_id = parent_pci;
      m.is_mig = true;
      auto memory = nvml::read_memory(api_, h);
      if (memory) {
        m.memory_total_bytes = memory->total;
        m.memory_used_bytes = memory->used;
      }
      unsigned int gi = 0;
      if (api_.get_gpu_instance_id && api_.get_gpu_instance_id(h, &gi) == nvml::kSuccess) {
        m.gpu_instance_id = static_cast<int>(gi);
        set_xid_fields(gpu.uuid, fmt::format("{}/{}", gpu.uuid, gi), m);
      }
      m.mig_profile = mig_profile_from_driver_name(
          m.name, parent_model, model::Bytes(memory ? static_cast<int64_t>(memory->total) : 0));
      m.processes = nvml::read_processes(api_, h);
      out.push_back(std::move(m));
    }
  }

  // XID errors arrive as events: one set for all GPUs, registered once per GPU as it appears.
  void watch_xids(const std::vector<PhysicalGpu>& gpus) TY_REQUIRES(mu_) {
    if (!api_.event_set_create || !api_.register_events || !api_.event_set_wait) return;
    if (!events_ && !event_set_failed_) {
      event_set_failed_ = api_.event_set_create(&events_) != nvml::kSuccess;
      if (event_set_failed_) events_ = nullptr;
    }
    if (!events_) return;
    for (const PhysicalGpu& gpu : gpus) {
      if (xid_watched_.contains(gpu.uuid)) continue;
      xid_watched_[gpu.uuid] =
          api_.register_events(gpu.handle, nvml::kEventXid, events_) == nvml::kSuccess;
    }
  }

  // Drains pending events without waiting (timeout 0), so a sample never blocks on them.
  void poll_xids(const std::vector<PhysicalGpu>& gpus) TY_REQUIRES(mu_) {
    if (!events_) return;
    for (int n = 0; n < kMaxEventsPerSample; ++n) {
      nvml::EventData e{};
      if (api_.event_set_wait(events_, &e, 0) != nvml::kSuccess) break;
      if (!(e.event_type & nvml::kEventXid)) continue;
      for (const PhysicalGpu& gpu : gpus) {
        if (gpu.handle != e.device) continue;
        auto xid = static_cast<int>(e.event_data);
        record_xid(gpu.uuid, xid);
        if (e.gpu_instance_id != nvml::kNoInstance) {
          record_xid(fmt::format("{}/{}", gpu.uuid, e.gpu_instance_id), xid);
        }
      }
    }
  }

  void record_xid(const std::string& key, int xid) TY_REQUIRES(mu_) {
    XidState& state = xids_[key];
    state.last = xid;
    ++state.count;
  }

  // XID fields are known (count 0 included) only for GPUs whose events are watched.
  void set_xid_fields(const std::string& gpu_uuid, const std::string& key, GpuSample& s) const
      TY_REQUIRES(mu_) {
    auto watched = xid_watched_.find(gpu_uuid);
    if (watched == xid_watched_.end() || !watched->second) return;
    auto it = xids_.find(key);
    s.xid_count = it == xids_.end() ? 0 : it->second.count;
    if (it != xids_.end()) s.last_xid = it->second.last;
  }

  // Serializes NVML calls (the functions that make them require it) and guards the state below.
  util::Mutex mu_;
  const nvml::Api api_;
  nvml::IntervalReadings interval_ TY_GUARDED_BY(mu_);  // borrows api_
  nvml::EventSet events_ TY_GUARDED_BY(mu_) = nullptr;
  bool event_set_failed_ TY_GUARDED_BY(mu_) = false;
  // GPU uuid -> registered for XID events
  std::map<std::string, bool> xid_watched_ TY_GUARDED_BY(mu_);
  // GPU uuid, or "<uuid>/<gpu instance id>"
  std::map<std::string, XidState> xids_ TY_GUARDED_BY(mu_);
  // GPU uuid -> newest process-util sample
  std::map<std::string, uint64_t> last_seen_us_ TY_GUARDED_BY(mu_);
  struct Held {
    std::optional<util::Time> read_at;
    GpuSample values;  // only the costly fields are set
  };
  // GPU uuid -> the costly readings last taken (read_costly)
  std::map<std::string, Held> held_ TY_GUARDED_BY(mu_);
};

util::Result<GpuSamplerPtr> load_nvml(std::initializer_list<const char*> paths) {
  nvml::Api api;
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
  if (const char* missing = nvml::bind_all(api)) {
    dlclose(api.library);
    return util::unavailable(fmt::format(
        "NVML at {} lacks {}: the NVIDIA driver is too old (R450 or newer is needed); {}", loaded,
        missing, kSimHint));
  }
  // NO_GPUS lets init succeed on a machine with the library but no GPU: it then has none.
  nvml::Return rc = api.init_with_flags ? api.init_with_flags(nvml::kInitFlagNoGpus) : api.init();
  if (rc != nvml::kSuccess) {
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
