// A worker's resources.limits in the job spec's own form, written in one place for the stored
// manifest (job_manifest_json.cc) and the API's job views (api_job_views.cc), which use
// different JSON types: `nvidia.com/gpu` (whole GPUs, or a fraction of one) or
// `nvidia.com/mig-<profile>`, then `cpu` (cores, or millicores as "500m") and `memory` ("2Gi").
#pragma once

#include <cstdint>
#include <string>

#include "model/job.h"
#include "model/quantity.h"

namespace trainyard::model {

template <class Json>
Json worker_limits_json(const WorkerRequest& w) {
  Json out = Json::object();
  if (!w.mig_profile.empty()) {
    out["nvidia.com/mig-" + w.mig_profile] = 1;
  } else if (w.gpu_milli.value() > 0 && w.gpus == 0) {
    out["nvidia.com/gpu"] =
        static_cast<double>(w.gpu_milli.value()) / static_cast<double>(kMilliPerGpu);
  } else {
    out["nvidia.com/gpu"] = w.gpus;
  }
  const int64_t cpu = w.cpu.value();
  if (cpu % 1000 == 0) {
    out["cpu"] = cpu / 1000;
  } else {
    out["cpu"] = std::to_string(cpu) + "m";
  }
  out["memory"] = format_bytes(w.memory);
  return out;
}

}  // namespace trainyard::model
