// What a simulation run hands a person: the side-by-side comparison table (absolute values and
// ratios to the first policy, normally fifo), per-job CSV, per-policy timeline CSV, a summary
// JSON, and SVG plots (JCT CDF, GPU allocation over time, queue length over time).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
// The cells of comparison_table: the header row, then one row per policy.
std::vector<std::vector<std::string>> comparison_cells(const std::vector<Summary>& summaries);
std::string summary_json(const RunInfo& info, const std::vector<Summary>& summaries);
std::string jobs_csv(const SimResult& r);
std::string timeline_csv(const SimResult& r);
// Writes summary.json, jobs-<policy>.csv, timeline-<policy>.csv and, with `plots`,
// jct-cdf.svg, gpu-allocation.svg, queue-length.svg into `dir` (created if missing).
// Returns the paths written.
// The data of `simulate --html` (a self-contained page, cli/simulate_html.cc): the run, the
// comparison table's cells, summary.json's numbers, each policy's JCT CDF on one shared
// log-spaced JCT grid, and GPU allocation and queue length resampled onto one shared time grid;
// grids have at most `max_points` points so the file stays small whatever the trace's size.
nlohmann::json html_report_data(const RunInfo& info, const std::vector<SimResult>& results,
                                const std::vector<Summary>& summaries, size_t max_points = 1000);
// A run's timeline resampled at `times` (seconds from the start): the last point at or before
// each time (a step function), as {"allocated_gpus", "pending", "nodes", "cost_usd"} columns.
nlohmann::json resample_timeline(const SimResult& r, const std::vector<double>& times);
// `n` evenly spaced times from 0 to the latest timeline point of `results`.
std::vector<double> timeline_grid(const std::vector<SimResult>& results, size_t n);

util::Result<std::vector<std::string>> write_report(const std::string& dir, const RunInfo& info,
                                                    const std::vector<SimResult>& results,
                                                    const std::vector<Summary>& summaries,
                                                    bool plots);

}  // namespace trainyard::sim
