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

std::vector<std::string> progress_cells(const nlohmann::json& job) {
  if (!job.contains("progress") || !job["progress"].is_object()) return {"-", "-", "-"};
  const nlohmann::json& p = job["progress"];
  auto number = [&](const char* key) -> std::optional<double> {
    if (!p.contains(key) || !p[key].is_number()) return std::nullopt;
    return p[key].get<double>();
  };
  std::string step = p.contains("step") ? p["step"].dump() : "-";
  if (auto total = number("totalSteps")) {
    step += fmt::format("/{:.0f}", *total);
    if (auto f = number("fraction")) step += fmt::format(" ({:.0f}%)", *f * 100);
  }
  std::string rate = "-";
  if (auto samples = number("samplesPerSecond")) {
    rate = short_rate(*samples) + " samples/s";
  } else if (auto steps = number("stepsPerSecond")) {
    rate = short_rate(*steps) + " steps/s";
  }
  const auto eta = number("etaSeconds");
  return {step, rate, eta ? short_duration(*eta) : "-"};
}

}  // namespace trainyard::cli
