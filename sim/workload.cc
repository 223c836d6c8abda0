#include "sim/workload.h"

#include <algorithm>
#include <array>
#include <random>

#include <fmt/format.h>

namespace trainyard::sim {
namespace {

util::Duration rounded_limit(util::Duration d) {
  using std::chrono::hours;
  using std::chrono::minutes;
  static const std::array<util::Duration, 15> kSteps = {
      minutes(15), minutes(30), hours(1),       hours(2),       hours(4),
      hours(8),    hours(12),   hours(24),      hours(48),      hours(72),
      hours(168),  hours(336),  hours(24 * 30), hours(24 * 60), hours(24 * 90)};
  for (auto s : kSteps) {
    if (d <= s) return s;
  }
  return d * 2;
}

}  // namespace

util::Status handle_bad_row(Workload& w, const TraceOptions& opts, util::Status error) {
  if (!opts.skip_bad_rows) {
    return error.with_context("bad row (use --skip-bad-rows to skip such rows and count them)");
  }
  ++w.skipped_rows;
  return util::Status::ok();
}

void finalize(Workload& w, const TraceOptions& opts) {
  std::stable_sort(w.jobs.begin(), w.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  if (opts.max_jobs > 0 && static_cast<int64_t>(w.jobs.size()) > opts.max_jobs) {
    w.jobs.resize(opts.max_jobs);
  }
  const util::Time first = w.jobs.empty() ? util::kEpoch : w.jobs.front().submit;
  std::mt19937_64 rng(opts.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int64_t next_id = 1;
  for (TraceJob& j : w.jobs) {
    j.id = util::JobId(next_id++);
    j.submit = util::kEpoch + (j.submit - first);
    const double draw = unit(rng);  // drawn for every job so choices do not shift each other
    if (!j.has_priority) {
      if (draw < opts.high_priority_share) {
        j.spec.priority_class = "high";
        j.spec.priority = model::kPriorityHigh;
      } else if (draw < opts.high_priority_share + opts.normal_priority_share) {
        j.spec.priority_class = "normal";
        j.spec.priority = model::kPriorityNormal;
      } else {
        j.spec.priority_class = "low";
        j.spec.priority = model::kPriorityLow;
      }
    }
    if (!j.has_runtime_limit) {
      switch (opts.runtime_limit) {
        case RuntimeLimitMode::Exact:
          j.spec.runtime_limit = j.duration;
          break;
        case RuntimeLimitMode::Rounded:
          j.spec.runtime_limit = rounded_limit(j.duration);
          break;
        case RuntimeLimitMode::None:
          j.spec.runtime_limit = util::Duration(0);
          break;
      }
    }
    if (j.spec.checkpoint_interval.count() == 0)
      j.spec.checkpoint_interval = opts.checkpoint_interval;
    if (j.name.empty()) j.name = fmt::format("job-{}", j.id.value());
    if (std::find(w.teams.begin(), w.teams.end(), j.spec.team) == w.teams.end()) {
      w.teams.push_back(j.spec.team);
    }
  }
}

}  // namespace trainyard::sim
