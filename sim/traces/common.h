// Helpers the trace adapters share: numeric fields checked against a range with file:line:column
// errors, and turning a GPU count into a gang of workers.
// Internal to sim/'s adapters; bounds keep microsecond arithmetic far from int64 overflow.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/job.h"
#include "sim/workload.h"
#include "util/csv_reader.h"
#include "util/status.h"

namespace trainyard::sim {

// Largest accepted time stamp and duration, in seconds. Times up to 1e12 s (year ~33,700) and
// durations up to 1e9 s (~31 years) stay well inside int64 microseconds when added up.
inline constexpr double kMaxTraceTimeSeconds = 1e12;
inline constexpr double kMaxTraceDurationSeconds = 1e9;
// Team of traces that name none (Tiresias, Sia, Pollux; the generic CSV without `team`).
inline constexpr std::string_view kDefaultTeam = "default";

// A time stamp in seconds, 0..kMaxTraceTimeSeconds.
util::Result<double> get_time_seconds(const util::CsvReader& csv, int col);
// A duration in seconds, > 0 and at most kMaxTraceDurationSeconds.
util::Result<double> get_duration_seconds(const util::CsvReader& csv, int col);
// A whole number in lo..hi; `unit` names what is counted ("GPUs").
util::Result<int64_t> get_int_in(const util::CsvReader& csv, int col, int64_t lo, int64_t hi,
                                 std::string_view unit);

// Splits a '|'-separated list ("V100M16|V100M32"); empty text gives an empty list. Empty
// items ("A||B") are an error naming the cell.
util::Result<std::vector<std::string>> split_list(const util::CsvReader& csv, int col);

// Sets spec.workers x spec.worker.gpus for `gpus` GPUs: one worker when gpus <= per_node_max,
// else workers of the largest count <= per_node_max that divides gpus (12 on 8 -> 2 x 6).
void split_into_workers(int64_t gpus, int per_node_max, model::JobSpec& spec);
// The worker size limit for a trace whose servers had `trace_server_gpus` GPUs, replayed with
// `opts` (TraceOptions::gpus_per_node, when set, is the smaller limit).
int worker_gpu_limit(int trace_server_gpus, const TraceOptions& opts);

// Runs `parse_row` on every row and applies the bad-row rules (handle_bad_row) to failures.
template <typename ParseRow>
util::Status for_each_row(util::CsvReader& csv, Workload& w, const TraceOptions& opts,
                          ParseRow&& parse_row) {
  while (csv.next()) {
    util::Status row = csv.row_status();
    if (row.is_ok()) row = parse_row();
    if (!row.is_ok()) TY_RETURN_IF_ERROR(handle_bad_row(w, opts, std::move(row)));
  }
  return util::Status::ok();
}

}  // namespace trainyard::sim
