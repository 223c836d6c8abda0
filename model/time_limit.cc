#include "model/time_limit.h"

#include <cstdint>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace trainyard::model {
namespace {

constexpr int64_t kMaxSeconds = int64_t{10} * 365 * 24 * 3600;

// Digits only, at most 9 of them (no overflow below), or nullopt.
std::optional<int64_t> number(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// "1h30m", "90m", "2d", "3600s": one or more <digits><unit>, units d, h, m, s in that order.
std::optional<int64_t> with_units(std::string_view s) {
  static constexpr std::string_view kUnits = "dhms";
  static constexpr int64_t kScale[] = {86400, 3600, 60, 1};
  int64_t total = 0;
  size_t next_unit = 0;
  while (!s.empty()) {
    size_t digits = 0;
    while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
    if (digits == s.size()) return std::nullopt;
    const auto v = number(s.substr(0, digits));
    const size_t unit = kUnits.find(s[digits], next_unit);
    if (!v || unit == std::string_view::npos) return std::nullopt;
    total += *v * kScale[unit];
    next_unit = unit + 1;
    s.remove_prefix(digits + 1);
  }
  return total;
}

// sbatch --time: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S".
std::optional<int64_t> sbatch_form(std::string_view s) {
  int64_t days = 0;
  const size_t dash = s.find('-');
  if (dash != std::string_view::npos) {
    const auto d = number(s.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    s.remove_prefix(dash + 1);
  }
  std::vector<int64_t> parts;
  for (size_t start = 0;;) {
    const size_t colon = s.find(':', start);
    const auto v = number(s.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (!v) return std::nullopt;
    parts.push_back(*v);
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return std::nullopt;
  parts.resize(3, 0);
  if (dash != std::string_view::npos)
    return days * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2];
  if (s.find(':') != s.rfind(':')) return parts[0] * 3600 + parts[1] * 60 + parts[2];  // H:M:S
  return parts[0] * 60 + parts[1];                                                     // M, M:S
}

}  // namespace

util::Result<util::Duration> parse_time_limit(std::string_view text) {
  const bool units = !text.empty() && text.find_first_of("dhms") != std::string_view::npos;
  const std::optional<int64_t> seconds = units ? with_units(text) : sbatch_form(text);
  if (!seconds)
    return util::invalid_argument(fmt::format(
        "time limit '{}' is not understood; write it as sbatch --time does (90 = 90 minutes, "
        "30:00, 2:00:00, 1-12:00:00) or with units (2h, 90m, 3600s, 1h30m, 2d)",
        text));
  if (*seconds < 1 || *seconds > kMaxSeconds)
    return util::invalid_argument(fmt::format(
        "time limit '{}' must be between 1 second and 10 years (got {} s)", text, *seconds));
  return util::seconds(*seconds);
}

}  // namespace trainyard::model
