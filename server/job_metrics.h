// The step-metric time series of GET /api/v1/jobs/{id}/metrics (job_metrics_views.cc).
#pragma once

#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "telemetry/doctor.h"

namespace trainyard::server {

// Columns for charts from metrics lines (attempt, line), oldest first: `time` (Unix seconds),
// `attempt`, `step`, `loss`, `stepTimeSeconds`, `dataWaitSeconds`, `dataWaitPercent` (the mean
// wait over the mean step time) and `samplesPerSecond` (samples over step time). At most
// `max_points` points: consecutive lines of one attempt are averaged into a point (the last
// line's time and step), nulls where no line of the point reported the field. Also `lines` (how
// many went in) and `points`.
nlohmann::json metrics_series(const std::vector<std::pair<int, telemetry::StepMetrics>>& lines,
                              int max_points);

}  // namespace trainyard::server
