// A job's progress from the newest lines of its metrics file (docs/job-contract.md, "Metrics"):
// the last step, the throughput over the recent lines, and, when the job says how many steps it
// means to run (`total_steps`), the fraction done and the time left. Pure: no clock, no I/O; the
// caller reads the tail of the file (server/progress_views.cc), so the cost does not grow with it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "telemetry/doctor.h"

namespace trainyard::telemetry {

struct StepProgress {
  int64_t step = 0;
  util::Time reported{};  // `time` of the newest line with a step
  std::optional<int64_t> total_steps;
  std::optional<double> steps_per_s;
  std::optional<double> samples_per_s;  // of the worker whose file was read
  // Seconds from `reported` to the last step at the current rate; 0 once step >= total.
  std::optional<double> eta_s;
  std::optional<double> fraction() const;  // step / total_steps, at most 1
};

struct StepProgressOptions {
  // Rates are taken over the lines of the last `window` before the newest one, so that they
  // follow the job's current speed rather than its average since the start.
  util::Duration window = util::seconds(5 * 60);
};

// Lines in file order. nullopt when no line carries a step. Steps that go back (a restart that
// appended to the same file) start the window afresh.
std::optional<StepProgress> step_progress(std::span<const StepMetrics> lines,
                                          const StepProgressOptions& options = {});

// The lines of a piece of a metrics file. `from_start` false: the piece was cut from the middle
// of the file, so its first line is partial and dropped. Lenient: lines that do not parse (and
// the unfinished last one) are skipped, since one bad line must not hide a job's progress.
std::vector<StepMetrics> parse_metrics_tail(std::string_view text, bool from_start);

}  // namespace trainyard::telemetry
