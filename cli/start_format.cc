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

std::string start_cell(const nlohmann::json& job) {
  if (!job.contains("estimatedStartBasis")) return "-";
  const nlohmann::json& at = job["estimatedStart"];
  if (!at.is_string()) return "unknown";
  // As squeue --start prints START_TIME; "now" once it has passed (the plan starts it soon).
  const std::string text = at.get<std::string>();
  return in_how_long(text) == "now" ? "now" : text.substr(0, 19);
}

std::string start_text(const nlohmann::json& job) {
  if (!job.contains("estimatedStartBasis")) return "";
  const std::string why = job.value("estimatedStartReason", "");
  const nlohmann::json& at = job["estimatedStart"];
  if (!at.is_string()) return "unknown: " + why;
  return fmt::format("{} ({}; {}: {})", at.get<std::string>(), in_how_long(at.get<std::string>()),
                     job.value("estimatedStartBasis", ""), why);
}

}  // namespace trainyard::cli
