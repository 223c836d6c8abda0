// A workload: the jobs a simulation replays, from a trace file or the synthetic generator.
// Each job has its request (JobSpec), submit time and the run time it needs on its GPUs when
// never interrupted (the oracle duration). Trace adapters fill what their trace has; finalize()
// then sorts, numbers, and fills what the trace lacks (runtime limits, priority classes,
// checkpoint intervals) by documented, seeded rules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/job.h"
#include "util/clock.h"
#include "util/ids.h"
#include "util/status.h"

namespace trainyard::sim {

struct TraceJob {
  util::JobId id;
  std::string name;
  model::JobSpec spec;
  util::Time submit{};
  util::Duration duration{0};
  bool has_priority = false;       // the trace gave a priority class
  bool has_runtime_limit = false;  // the trace gave a runtime limit
};

struct Workload {
  std::string source;
  std::vector<TraceJob> jobs;
  std::vector<std::string> teams;  // in order of first appearance
  int64_t skipped_rows = 0;
};

// How runtime limits are derived when a trace has none (backfill uses them).
enum class RuntimeLimitMode {
  Exact,    // limit = the job's real duration (perfect user estimates)
  Rounded,  // the next of 15m, 30m, 1h, 2h, 4h, 8h, 12h, 1d, 2d, 3d, 7d, 14d, 30d, 60d, 90d
  None,     // no limits (backfill can reserve nothing)
};

struct TraceOptions {
  bool skip_bad_rows = false;
  RuntimeLimitMode runtime_limit = RuntimeLimitMode::Rounded;
  uint64_t seed = 1;
  // Share of jobs given the high and normal priority classes when the trace has none; the rest
  // are low. Drawn per job from `seed`.
  double high_priority_share = 0.1;
  double normal_priority_share = 0.3;
  util::Duration checkpoint_interval = util::seconds(1800);  // when the trace has none
  int64_t max_jobs = 0;                                      // 0 = all
};

// Every trace format trainyard reads, by name: philly, alibaba, tiresias, sia, pollux, csv.
std::vector<std::string> trace_formats();
// Loads `path` in `format` ("auto" guesses from the header row), then finalize()s it.
util::Result<Workload> load_trace(const std::string& format, const std::string& path,
                                  const TraceOptions& opts);

// Sorts jobs by (submit, trace order), numbers them 1..n, shifts submit times so the first is
// at 0, and fills runtime limits, priorities and checkpoint intervals the trace lacked.
void finalize(Workload& w, const TraceOptions& opts);

util::Result<Workload> load_philly(const std::string& path, const TraceOptions& opts);

// Adds a row's error to the workload or returns it, per opts.skip_bad_rows.
util::Status handle_bad_row(Workload& w, const TraceOptions& opts, util::Status error);

}  // namespace trainyard::sim
