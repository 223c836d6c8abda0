// A job's per-minute GPU history for people: sparklines of utilization and memory per GPU with
// min/max/mean labels (telemetry_command.cc), drawn by `trainyard show`.
#pragma once

#include <ostream>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/telemetry_rows.h"

namespace trainyard::cli {

void print_gpu_history(const std::vector<TelemetryRow>& rows, bool ascii, std::ostream& out);
// Fetches the job's telemetry and prints its history to stdout.
util::Status print_job_gpu_history(ApiClient& api, int64_t id, bool ascii);
// `trainyard telemetry JOB [-o csv|json|table]`.
Runner add_telemetry_command(CLI::App& app);

}  // namespace trainyard::cli
