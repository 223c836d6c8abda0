// How `trainyard ls` shows a running job's progress (the API's `progress` object, docs/api.md):
// the step (of the total when known), the throughput the job's metrics carry (samples/s, else
// steps/s) and the time left. "-" for jobs without step metrics. Pure.
#pragma once

#include <string>
#include <vector>

#include <optional>

#include "model/api_views.h"

namespace trainyard::cli {

// STEP, RATE and ETA cells of a job's `progress` (nullopt: the job reports none).
std::vector<std::string> progress_cells(const std::optional<model::JobProgressView>& progress);
// "1h02m", "5m07s", "42s"; "-" for a negative or non-finite number.
std::string short_duration(double seconds);
// "1.2k", "980", "3.4" (two significant digits below 10).
std::string short_rate(double per_second);

}  // namespace trainyard::cli
