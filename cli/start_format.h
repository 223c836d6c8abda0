// A pending job's expected start as the job API gives it (estimatedStart, its basis and
// reason), for `ls -o wide` (START) and `show`, like squeue --start.
#pragma once

#include <string>

#include "model/api_views.h"

namespace trainyard::cli {

// "2026-11-26T10:20:00" (UTC, as squeue --start), "now", "unknown", or "-" for a job that is
// not pending (or not estimated yet).
std::string start_cell(const model::JobView& job);
// "2026-11-26T10:20:00Z (in 20m; replay: after job 12 ends by runtime limit)" or
// "unknown: <why>"; "" for a job without an estimate.
std::string start_text(const model::JobView& job);

}  // namespace trainyard::cli
