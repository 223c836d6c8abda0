// Bamboo's three CSV shapes (uclasystem/bamboo): cluster event logs "time_ms,event,node", GCP
// count logs "YYYY-MM-DD, HH:MM:SS, count" and doc-data step series "hours,count". Rows come
// split by util::CsvTable; each reader checks its fields and names file:line and the expected
// shape.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "cloud/internal/spot_trace_parse.h"

namespace trainyard::cloud::internal {
namespace {

constexpr util::Duration kMaxOffset = std::chrono::milliseconds(kMaxTimeMs);

std::string where(const util::CsvTable& rows, size_t row) {
  return rows.name() + ":" + std::to_string(rows.line(row));
}

// A whole field of decimal digits, at most `max`.
std::optional<int64_t> parse_uint(std::string_view s, int64_t max) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  int64_t v = -1;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v > max) return std::nullopt;
  return v;
}

util::Result<int> parse_count(const util::CsvTable& rows, size_t row, std::string_view field) {
  auto v = parse_uint(field, kMaxCount);
  if (!v) {
    return util::invalid_argument(where(rows, row) + ": count '" + std::string(field) +
                                  "' must be an integer from 0 to " + std::to_string(kMaxCount));
  }
  return static_cast<int>(*v);
}

// "2021-12-11" and "11:11:30" as an instant (UTC; only differences matter).
std::optional<util::Duration> parse_date_time(std::string_view date, std::string_view time) {
  auto part = [](std::string_view& s, char sep, size_t min_len, size_t max_len,
                 int64_t max) -> std::optional<int64_t> {
    const size_t cut = std::min(s.find(sep), s.size());
    const std::string_view p = s.substr(0, cut);
    s.remove_prefix(cut == s.size() ? cut : cut + 1);
    if (p.size() < min_len || p.size() > max_len) return std::nullopt;
    return parse_uint(p, max);
  };
  if (std::count(date.begin(), date.end(), '-') != 2 ||
      std::count(time.begin(), time.end(), ':') != 2) {
    return std::nullopt;
  }
  auto y = part(date, '-', 4, 4, 9999);
  auto m = part(date, '-', 1, 2, 12);
  auto d = part(date, '-', 1, 2, 31);
  auto hh = part(time, ':', 1, 2, 23);
  auto mm = part(time, ':', 2, 2, 59);
  auto ss = part(time, ':', 2, 2, 59);
  if (!y || !m || !d || !hh || !mm || !ss || !date.empty() || !time.empty()) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year(static_cast<int>(*y)),
                                        std::chrono::month(static_cast<unsigned>(*m)),
                                        std::chrono::day(static_cast<unsigned>(*d))};
  if (!ymd.ok()) return std::nullopt;
  const auto day = std::chrono::sys_days(ymd).time_since_epoch();
  return std::chrono::duration_cast<util::Duration>(day) + std::chrono::hours(*hh) +
         std::chrono::minutes(*mm) + std::chrono::seconds(*ss);
}

// "12", "0.030" or ".5" in `unit`s, exactly (no floating point): at most 9 decimals.
std::optional<util::Duration> parse_decimal(std::string_view s, util::Duration unit) {
  const size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? "" : s.substr(dot + 1);
  if ((whole.empty() && frac.empty()) || frac.size() > 9) return std::nullopt;
  const int64_t max_whole = kMaxOffset / unit;
  std::optional<int64_t> w = whole.empty() ? 0 : parse_uint(whole, max_whole);
  std::optional<int64_t> f = frac.empty() ? 0 : parse_uint(frac, 999'999'999);
  if (!w || !f) return std::nullopt;
  int64_t scale = 1;
  for (size_t i = 0; i < frac.size(); ++i) scale *= 10;
  // unit ≤ 1 h = 3.6e9 µs and f < 1e9: the product fits in int64.
  return unit * *w + util::Duration((unit.count() * *f + scale / 2) / scale);
}

bool has_dot(std::string_view s) {
  return s.find('.') != std::string_view::npos;
}

}  // namespace

util::Result<SpotTrace> parse_bamboo_events(const util::CsvTable& rows) {
  SpotTrace t;
  t.source = rows.name();
  std::set<std::string, std::less<>> live;
  int64_t last_ms = -1;
  int64_t min_gap_ms = std::numeric_limits<int64_t>::max();
  int removed_now = 0;  // removes at last_ms
  auto flush = [&] {
    if (last_ms < 0) return;
    const util::Duration offset = std::chrono::milliseconds(last_ms);
    const int count = static_cast<int>(live.size());
    if (removed_now > 0) {
      t.reclaims.push_back({.offset = offset, .nodes = removed_now, .to_zero = count == 0});
    }
    if (t.capacity.empty() && offset > util::Duration::zero()) push_step(t, {}, 0);
    push_step(t, offset, count);
    removed_now = 0;
  };
  for (size_t row = is_header_row(rows) ? 1 : 0; row < rows.row_count(); ++row) {
    const std::vector<std::string_view> f = trimmed_fields(rows, row);
    if (f.size() != 3) {
      return util::invalid_argument(where(rows, row) +
                                    ": expected 3 fields time_ms,event,node, got " +
                                    std::to_string(f.size()));
    }
    auto ms = parse_uint(f[0], kMaxTimeMs);
    if (!ms) {
      return util::invalid_argument(where(rows, row) + ": time_ms '" + std::string(f[0]) +
                                    "' must be a non-negative integer of milliseconds");
    }
    if (*ms < last_ms) {
      return util::invalid_argument(where(rows, row) + ": time " + std::to_string(*ms) +
                                    " ms is before the previous row's; sort the log by time");
    }
    if (f[2].empty()) return util::invalid_argument(where(rows, row) + ": node name is empty");
    if (*ms > last_ms) {
      flush();
      if (last_ms >= 0) min_gap_ms = std::min(min_gap_ms, *ms - last_ms);
      last_ms = *ms;
    }
    if (f[1] == "add") {
      if (!live.emplace(f[2]).second) {
        return util::invalid_argument(where(rows, row) + ": node '" + std::string(f[2]) +
                                      "' is added twice without a remove");
      }
    } else if (f[1] == "remove") {
      auto it = live.find(f[2]);
      if (it == live.end()) {
        return util::invalid_argument(where(rows, row) + ": node '" + std::string(f[2]) +
                                      "' is removed but was never added");
      }
      live.erase(it);
      ++removed_now;
    } else {
      return util::invalid_argument(where(rows, row) + ": event '" + std::string(f[1]) +
                                    "' must be add or remove");
    }
  }
  if (last_ms < 0) {
    return util::invalid_argument(rows.name() + ": no events (expected time_ms,event,node rows)");
  }
  flush();
  if (min_gap_ms == std::numeric_limits<int64_t>::max()) min_gap_ms = 60'000;
  t.period = std::chrono::milliseconds(last_ms + min_gap_ms);
  return t;
}

util::Result<SpotTrace> parse_bamboo_gcp(const util::CsvTable& rows) {
  SpotTrace t;
  t.source = rows.name();
  CountSeries series(t);
  std::optional<util::Duration> first, last;
  for (size_t row = is_header_row(rows) ? 1 : 0; row < rows.row_count(); ++row) {
    const std::vector<std::string_view> f = trimmed_fields(rows, row);
    if (f.size() != 3) {
      return util::invalid_argument(where(rows, row) +
                                    ": expected 3 fields YYYY-MM-DD, HH:MM:SS, count (Bamboo "
                                    "GCP trace), got " +
                                    std::to_string(f.size()));
    }
    auto at = parse_date_time(f[0], f[1]);
    if (!at) {
      return util::invalid_argument(where(rows, row) + ": '" + std::string(f[0]) + ", " +
                                    std::string(f[1]) +
                                    "' must be a date and time YYYY-MM-DD, HH:MM:SS");
    }
    TY_ASSIGN_OR_RETURN(const int count, parse_count(rows, row, f[2]));
    if (!first) first = *at;
    if (last && *at < *last) {
      return util::invalid_argument(where(rows, row) + ": " + std::string(f[0]) + ", " +
                                    std::string(f[1]) +
                                    " is before the previous row's; sort the trace by time");
    }
    if (*at - *first > kMaxOffset) {
      return util::invalid_argument(where(rows, row) + ": more than a century after the first row");
    }
    last = *at;
    series.add(*at - *first, count);
  }
  if (series.empty()) {
    return util::invalid_argument(rows.name() +
                                  ": no rows (expected YYYY-MM-DD, HH:MM:SS, count rows)");
  }
  series.finish(util::Duration::zero());
  return t;
}

util::Result<SpotTrace> parse_bamboo_series(const util::CsvTable& rows) {
  // The unit: a header names it ("hours,count" or "seconds,count"); without one, a time with a
  // decimal point means hours (the _scaled files) and whole numbers mean seconds.
  const bool header = is_header_row(rows);
  const size_t begin = header ? 1 : 0;
  std::optional<bool> hours;
  if (header) {
    std::string h(trimmed_fields(rows, 0).front());
    std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
    if (h.starts_with("hour")) hours = true;
    if (h.starts_with("sec")) hours = false;
  }
  if (!hours) {
    hours = false;
    for (size_t row = begin; row < rows.row_count(); ++row) {
      if (has_dot(trimmed_fields(rows, row).front())) hours = true;
    }
  }
  const util::Duration unit = *hours ? util::seconds(3600) : util::seconds(1);
  const char* unit_name = *hours ? "hours" : "seconds";
  SpotTrace t;
  t.source = rows.name();
  CountSeries series(t);
  util::Duration last{0};
  for (size_t row = begin; row < rows.row_count(); ++row) {
    const std::vector<std::string_view> f = trimmed_fields(rows, row);
    if (f.size() != 2) {
      return util::invalid_argument(where(rows, row) + ": expected 2 fields " + unit_name +
                                    ",count (Bamboo doc-data series), got " +
                                    std::to_string(f.size()));
    }
    auto at = parse_decimal(f[0], unit);
    if (!at) {
      return util::invalid_argument(
          where(rows, row) + ": time '" + std::string(f[0]) + "' must be a non-negative " +
          (*hours ? "decimal number of hours (e.g. 0.030)" : "whole number of seconds") +
          " of at most a century");
    }
    TY_ASSIGN_OR_RETURN(const int count, parse_count(rows, row, f[1]));
    if (*at < last) {
      return util::invalid_argument(where(rows, row) + ": time " + std::string(f[0]) + " " +
                                    unit_name +
                                    " is before the previous row's; sort the series by time");
    }
    last = *at;
    series.add(*at, count);
  }
  if (series.empty()) {
    return util::invalid_argument(rows.name() + ": no rows (expected hours,count rows)");
  }
  series.finish(util::Duration::zero());
  return t;
}

}  // namespace trainyard::cloud::internal
