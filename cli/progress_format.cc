#include "cli/progress_format.h"

#include <cmath>

#include <fmt/format.h>

namespace trainyard::cli {

std::string short_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d{:02d}h", s / 86400, (s % 86400) / 3600);
}

std::string short_rate(double per_second) {
  if (!std::isfinite(per_second) || per_second < 0) return "-";
  if (per_second >= 1e6) return fmt::format("{:.1f}M", per_second / 1e6);
  if (per_second >= 1e4) return fmt::format("{:.0f}k", per_second / 1e3);
  if (per_second >= 1e3) return fmt::format("{:.1f}k", per_second / 1e3);
  if (per_second >= 10) return fmt::format("{:.0f}", per_second);
  return fmt::format("{:.2g}", per_second);
}

std::vector<std::string> progress_cells(const std::optional<model::JobProgressView>& progress) {
  if (!progress) return {"-", "-", "-"};
  const model::JobProgressView& p = *progress;
  std::string step = std::to_string(p.step);
  if (p.total_steps) {
    step += fmt::format("/{}", *p.total_steps);
    if (p.fraction) step += fmt::format(" ({:.0f}%)", *p.fraction * 100);
  }
  std::string rate = "-";
  if (p.samples_per_second) {
    rate = short_rate(*p.samples_per_second) + " samples/s";
  } else if (p.steps_per_second) {
    rate = short_rate(*p.steps_per_second) + " steps/s";
  }
  return {step, rate,
          p.eta_seconds ? short_duration(static_cast<double>(*p.eta_seconds)) : std::string("-")};
}

}  // namespace trainyard::cli
