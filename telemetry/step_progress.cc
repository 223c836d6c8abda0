#include "telemetry/step_progress.h"

#include <algorithm>

namespace trainyard::telemetry {

std::optional<double> StepProgress::fraction() const {
  if (!total_steps || *total_steps <= 0) return std::nullopt;
  return std::min(1.0, static_cast<double>(step) / static_cast<double>(*total_steps));
}

namespace {

// The index of the first line of the window: the newest run of non-decreasing steps, cut to the
// lines within `window` of the newest one.
size_t window_start(const std::vector<const StepMetrics*>& stepped, util::Duration window) {
  size_t first = stepped.size() - 1;
  const StepMetrics& last = *stepped.back();
  while (first > 0) {
    const StepMetrics& prev = *stepped[first - 1];
    if (*prev.step > *stepped[first]->step) break;
    if (last.time - prev.time > window) break;
    --first;
  }
  return first;
}

void add_rates(const std::vector<const StepMetrics*>& w, StepProgress& p) {
  const StepMetrics& first = *w.front();
  const StepMetrics& last = *w.back();
  const double dt_s = util::to_seconds(last.time - first.time);
  const int64_t dsteps = *last.step - *first.step;
  double step_time_sum = 0, samples_sum = 0;
  int64_t step_time_n = 0, samples_n = 0;
  for (const StepMetrics* m : w) {
    if (m->step_time_s && *m->step_time_s > 0) step_time_sum += *m->step_time_s, ++step_time_n;
    if (m->samples) samples_sum += static_cast<double>(*m->samples), ++samples_n;
  }
  if (dt_s > 0 && dsteps > 0) {
    p.steps_per_s = static_cast<double>(dsteps) / dt_s;
  } else if (step_time_n > 0) {
    // One line (or all in one instant): the job's own step times are the only evidence.
    p.steps_per_s = static_cast<double>(step_time_n) / step_time_sum;
  }
  if (samples_n > 0 && p.steps_per_s) {
    // Samples per step times steps per second: counts the time between steps (evaluation,
    // checkpoints) that the step times leave out.
    p.samples_per_s = samples_sum / static_cast<double>(samples_n) * *p.steps_per_s;
  }
}

}  // namespace

std::optional<StepProgress> step_progress(std::span<const StepMetrics> lines,
                                          const StepProgressOptions& options) {
  std::vector<const StepMetrics*> stepped;
  StepProgress p;
  for (const StepMetrics& m : lines) {
    if (m.total_steps) p.total_steps = m.total_steps;
    if (m.step) stepped.push_back(&m);
  }
  if (stepped.empty()) return std::nullopt;
  const size_t first = window_start(stepped, options.window);
  const std::vector<const StepMetrics*> window(stepped.begin() + static_cast<ptrdiff_t>(first),
                                               stepped.end());
  p.step = *stepped.back()->step;
  p.reported = stepped.back()->time;
  add_rates(window, p);
  if (p.total_steps && *p.total_steps > 0) {
    const int64_t left = std::max<int64_t>(0, *p.total_steps - p.step);
    if (left == 0) {
      p.eta_s = 0.0;
    } else if (p.steps_per_s && *p.steps_per_s > 0) {
      p.eta_s = static_cast<double>(left) / *p.steps_per_s;
    }
  }
  return p;
}

std::vector<StepMetrics> parse_metrics_tail(std::string_view text, bool from_start) {
  std::vector<StepMetrics> out;
  size_t pos = 0;
  if (!from_start) {
    const size_t nl = text.find('\n');
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) break;  // still being written
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (auto m = parse_step_metrics_line(line); m.is_ok()) out.push_back(std::move(*m));
  }
  return out;
}

}  // namespace trainyard::telemetry
