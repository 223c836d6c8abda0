// The only way trainyard reaches GPUs. Two implementations: NVML, loaded with dlopen at run
// time so nothing needs the driver to build (nvml_sampler.cc), and a synthetic one for
// machines without GPUs (synthetic_sampler.cc). Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/sim_gpu_profile.h"
#include "telemetry/gpu_device.h"
#include "telemetry/gpu_sample.h"
#include "util/status.h"

namespace trainyard::telemetry {

// What a synthetic GPU is running, so it can produce believable curves: the server sets it when it
// places a job (from the job's declared profile or its reported step metrics) and clears it when
// the job ends. Real backends ignore it.
struct SyntheticLoad {
  std::string job_id;
  // One of model::kSimGpuProfiles (model/sim_gpu_profile.h): "healthy", "data-bound"
  // (input-pipeline bound), "memory-leak", "overheating", "underfilled" (small batch: low memory
  // and low utilization), "idle" (holds the GPU, computes nothing), "fp32" (healthy, but trains
  // in fp32: tensor cores idle). Unknown names look healthy.
  std::string profile = std::string(model::kSimProfileHealthy);
  util::Time start{};     // when the job started on the device
  std::vector<int> pids;  // reported as the device's processes
  // From the job's step metrics when it reports them: the share of a step spent waiting on data.
  std::optional<double> data_wait_fraction;
  // From the job's step metrics when it reports it: the dtype it trains in ("bf16", "fp32"). An
  // fp32 job leaves the tensor cores idle, like the "fp32" profile.
  std::string dtype;
};

class GpuSampler {
 public:
  virtual ~GpuSampler() = default;
  // The GPUs of this machine, ordered by index. Unavailable when the driver cannot be used.
  virtual util::Result<std::vector<GpuDevice>> devices() = 0;
  // One reading of every GPU and every MIG device (after their parent), stamped `now`.
  virtual util::Result<std::vector<GpuSample>> sample(util::Time now) = 0;
  // Synthetic samplers: what runs on the device `uuid` from now on (nullopt: nothing).
  virtual void set_synthetic_load(const std::string& uuid, std::optional<SyntheticLoad> load) {
    (void)uuid;
    (void)load;
  }
  // "nvml", "synthetic", or "none" (the machine has no usable GPUs).
  virtual std::string_view kind() const = 0;
};
using GpuSamplerPtr = std::unique_ptr<GpuSampler>;

// "sim:4xH100-80GB" (also "sim:2xA100-80GB,1xL4"): synthetic GPUs of known accelerator
// models, UUIDs "GPU-sim-<index>-<model>", marked simulated. An entry ending in ":mig"
// ("sim:1xA100-40GB:mig") has MIG mode on, with no instances made yet.
util::Result<GpuSamplerPtr> make_synthetic_sampler(std::string_view spec);
// NVML through dlopen("libnvidia-ml.so.1"); Unavailable with the reason when it cannot load.
util::Result<GpuSamplerPtr> make_nvml_sampler();
// The same from a given library path only (e.g. a fake NVML built by the tests).
util::Result<GpuSamplerPtr> make_nvml_sampler_for_test(const std::string& library_path);
// "auto" (NVML if it loads, else no GPUs), "none", "nvml", or a "sim:..." spec.
util::Result<GpuSamplerPtr> make_gpu_sampler(std::string_view spec);

}  // namespace trainyard::telemetry
