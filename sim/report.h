// What a simulation run hands a person: the side-by-side comparison table (absolute values and
// ratios to the first policy, normally fifo), per-job CSV, per-policy timeline CSV, a summary
// JSON, and SVG plots (JCT CDF, GPU allocation over time, queue length over time).
#pragma once

#include <string>
#include <vector>

#include "sim/metrics.h"
#include "sim/simulator.h"
#include "util/status.h"

namespace trainyard::sim {

struct RunInfo {
  std::string trace;
  std::string cluster;
  int64_t cluster_gpus = 0;
  int64_t jobs = 0;
  int64_t skipped_rows = 0;
  uint64_t seed = 0;
};

// Human-readable durations: "45s", "12.3m", "5.21h", "3.40d".
std::string format_duration_s(double seconds);
std::string comparison_table(const std::vector<Summary>& summaries);
std::string summary_json(const RunInfo& info, const std::vector<Summary>& summaries);
std::string jobs_csv(const SimResult& r);
std::string timeline_csv(const SimResult& r);
// Writes summary.json, jobs-<policy>.csv, timeline-<policy>.csv and, with `plots`,
// jct-cdf.svg, gpu-allocation.svg, queue-length.svg into `dir` (created if missing).
// Returns the paths written.
util::Result<std::vector<std::string>> write_report(const std::string& dir, const RunInfo& info,
                                                    const std::vector<SimResult>& results,
                                                    const std::vector<Summary>& summaries,
                                                    bool plots);

}  // namespace trainyard::sim
