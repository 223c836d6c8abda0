// `logs --tail N --since 10m|TIME` as the logs API's query parameters (docs/api.md), checked
// before anything is sent so a typo fails at once.
#include <fmt/format.h>

#include "cli/job_lookup.h"
#include "util/time_text.h"

namespace trainyard::cli {

util::Result<std::string> log_window_query(const std::string& since, int64_t tail) {
  std::string q;
  if (tail >= 0) q += fmt::format("&tailLines={}", tail);
  if (since.empty()) return q;
  if (auto d = util::parse_duration(since); d.is_ok()) {
    const int64_t micros = d->count();
    return q + fmt::format("&sinceSeconds={}", (micros + 999999) / 1000000);
  }
  if (auto t = util::parse_rfc3339(since); t.is_ok()) return q + "&sinceTime=" + url_encode(since);
  return util::invalid_argument(
      fmt::format("--since must be a duration like 10m or 1h30m, or an RFC 3339 time like "
                  "2026-11-26T10:00:00Z; got '{}'",
                  since));
}

}  // namespace trainyard::cli
