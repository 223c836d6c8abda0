// The minutes not stored yet (the one in progress, or any the recorder has not written) of a
// job's raw samples, summarized like the stored ones, so that `trainyard show` and
// `trainyard telemetry` also have something to draw for a job younger than a minute. Pure.
#pragma once

#include <vector>

#include "store/store.h"
#include "telemetry/gpu_sample.h"

namespace trainyard::server {

// One row per device and minute of `samples` (any order), ordered by minute, then device.
std::vector<store::TelemetryMinute> summarize_minutes(
    const std::vector<telemetry::GpuSample>& samples);

}  // namespace trainyard::server
