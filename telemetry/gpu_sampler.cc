// Picks a sampler from the --gpus spec; "auto" lets a machine without a driver run with no GPUs.
#include "telemetry/gpu_sampler.h"

#include <fmt/format.h>

#include "util/log.h"

namespace trainyard::telemetry {
namespace {

class NoGpuSampler final : public GpuSampler {
 public:
  util::Result<std::vector<GpuDevice>> devices() override { return std::vector<GpuDevice>{}; }
  util::Result<std::vector<GpuSample>> sample(util::Time) override {
    return std::vector<GpuSample>{};
  }
  std::string_view kind() const override { return "none"; }
};

}  // namespace

util::Result<GpuSamplerPtr> make_gpu_sampler(std::string_view spec) {
  if (spec == "none") return GpuSamplerPtr(std::make_unique<NoGpuSampler>());
  if (spec == "nvml") return make_nvml_sampler();
  if (spec.starts_with("sim:")) return make_synthetic_sampler(spec);
  if (spec == "auto") {
    auto nvml = make_nvml_sampler();
    if (nvml.is_ok()) return nvml;
    TY_LOG_INFO("no GPUs: {}", nvml.status().message());
    return GpuSamplerPtr(std::make_unique<NoGpuSampler>());
  }
  return util::invalid_argument(
      fmt::format("GPU spec '{}': expected auto, none, nvml or sim:<count>x<model>[,...] "
                  "(e.g. sim:4xH100-80GB)",
                  spec));
}

}  // namespace trainyard::telemetry
