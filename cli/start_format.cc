#include "cli/start_format.h"

#include <ctime>

#include <fmt/format.h>

#include "util/clock.h"

namespace trainyard::cli {
namespace {

// "in 20m" / "in 1h05m" / "in 2d03h" / "now" from an RFC 3339 time; "" when unparsable.
std::string in_how_long(const std::string& when) {
  std::tm tm{};
  if (strptime(when.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return "";
  const auto at = util::kEpoch + util::seconds(timegm(&tm));
  const int64_t s = (at - util::WallClock().now()).count() / 1000000;
  if (s <= 0) return "now";
  if (s < 60) return fmt::format("in {}s", s);
  if (s < 3600) return fmt::format("in {}m", (s + 30) / 60);
  if (s < 86400) return fmt::format("in {}h{:02d}m", s / 3600, (s % 3600) / 60);
  return fmt::format("in {}d{:02d}h", s / 86400, (s % 86400) / 3600);
}

}  // namespace

std::string start_cell(const model::JobView& job) {
  if (!job.start_estimate) return "-";
  if (!job.start_estimate->at) return "unknown";
  // As squeue --start prints START_TIME; "now" once it has passed (the plan starts it soon).
  const std::string& text = *job.start_estimate->at;
  return in_how_long(text) == "now" ? "now" : text.substr(0, 19);
}

std::string start_text(const model::JobView& job) {
  if (!job.start_estimate) return "";
  const model::StartEstimateView& e = *job.start_estimate;
  if (!e.at) return "unknown: " + e.reason;
  return fmt::format("{} ({}; {}: {})", *e.at, in_how_long(*e.at), e.basis, e.reason);
}

}  // namespace trainyard::cli
