#include "util/time_text.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace trainyard::util {
namespace {

// Reads exactly `n` digits at `pos`.
bool digits(std::string_view s, size_t& pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  pos += n;
  return true;
}

bool expect(std::string_view s, size_t& pos, std::string_view chars) {
  if (pos >= s.size() || chars.find(s[pos]) == std::string_view::npos) return false;
  ++pos;
  return true;
}

}  // namespace

Result<Time> parse_rfc3339(std::string_view text) {
  auto bad = [&] {
    return invalid_argument(
        fmt::format("'{}' is not an RFC 3339 time; write it like 2026-11-26T10:00:00Z or "
                    "2026-11-26T11:00:00+01:00",
                    text));
  };
  size_t pos = 0;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!digits(text, pos, 4, y) || !expect(text, pos, "-") || !digits(text, pos, 2, mo) ||
      !expect(text, pos, "-") || !digits(text, pos, 2, d) || !expect(text, pos, "Tt ") ||
      !digits(text, pos, 2, h) || !expect(text, pos, ":") || !digits(text, pos, 2, mi) ||
      !expect(text, pos, ":") || !digits(text, pos, 2, s))
    return bad();
  int64_t micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t scale = 100000;
    const size_t start = pos;
    for (; pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])); ++pos) {
      micros += (text[pos] - '0') * scale;
      scale /= 10;
    }
    if (pos == start) return bad();
  }
  int offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos++] == '-' ? -1 : 1;
    int oh = 0, om = 0;
    if (!digits(text, pos, 2, oh) || !expect(text, pos, ":") || !digits(text, pos, 2, om) ||
        oh > 23 || om > 59)
      return bad();
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return bad();
  }
  using namespace std::chrono;
  const year_month_day ymd{year(y), month(static_cast<unsigned>(mo)),
                           day(static_cast<unsigned>(d))};
  if (pos != text.size() || !ymd.ok() || h > 23 || mi > 59 || s > 60) return bad();
  return Time(sys_days(ymd)) + hours(h) + minutes(mi - offset_minutes) + std::chrono::seconds(s) +
         microseconds(micros);
}

Result<Duration> parse_duration(std::string_view text) {
  auto bad = [&] {
    return invalid_argument(fmt::format(
        "'{}' is not a duration; write a number and a unit (s, m or h), e.g. 90s, 10m, 1h30m",
        text));
  };
  if (text.empty()) return bad();
  Duration total{0};
  std::string_view rest = text;
  while (!rest.empty()) {
    int64_t n = 0;
    const auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
    if (ec != std::errc() || n < 0 || n > 1000000000) return bad();
    rest.remove_prefix(static_cast<size_t>(p - rest.data()));
    if (rest.starts_with("ms")) {
      total += std::chrono::milliseconds(n);
      rest.remove_prefix(2);
    } else if (!rest.empty() && (rest[0] == 'h' || rest[0] == 'm' || rest[0] == 's')) {
      total += seconds(n * (rest[0] == 'h' ? 3600 : rest[0] == 'm' ? 60 : 1));
      rest.remove_prefix(1);
    } else {
      return bad();
    }
  }
  if (total <= Duration{0}) return bad();
  return total;
}

}  // namespace trainyard::util
