// What the machine's GPUs are: one entry per physical GPU (and its MIG instances), as the
// executor needs them to pin jobs and the server to describe the node. Plain data.
#pragma once

#include <string>
#include <vector>

#include "model/quantity.h"

namespace trainyard::telemetry {

struct MigInstance {
  std::string uuid;     // "MIG-..." as CUDA_VISIBLE_DEVICES takes it
  std::string profile;  // "1g.10gb"
  int start = 0;        // first memory slice
};

struct GpuDevice {
  int index = 0;
  std::string uuid;   // "GPU-..." (synthetic ones: "GPU-sim-...")
  std::string name;   // driver's name, e.g. "NVIDIA H100 80GB HBM3"
  std::string model;  // canonical accelerator name ("H100-80GB"), or `name` if unknown
  model::Bytes memory{0};
  bool mig_enabled = false;
  std::vector<MigInstance> mig_instances;
  bool simulated = false;
};

}  // namespace trainyard::telemetry
