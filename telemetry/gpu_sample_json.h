// A GpuSample as JSON and back: how a worker's wrapper on another node hands its GPU readings to
// the server through the shared directory (docs/slurm.md). Every measurement keeps its "not
// measured" (null) apart from zero.
#pragma once

#include <nlohmann/json.hpp>

#include "telemetry/gpu_sample.h"
#include "util/status.h"

namespace trainyard::telemetry {

nlohmann::json sample_to_json(const GpuSample& s);
// InvalidArgument naming the field when `j` is not such an object.
util::Result<GpuSample> sample_from_json(const nlohmann::json& j);

}  // namespace trainyard::telemetry
