#include "sim/traces/sacct_fields.h"

#include <charconv>
#include <ctime>
#include <vector>

#include <fmt/format.h>

namespace trainyard::sim {
namespace {

// Most days a time limit may name: beyond it the seconds exceed the trace bounds anyway.
constexpr int64_t kMaxLimitDays = 100'000;

bool digits_value(std::string_view s, size_t max_len, int64_t& v) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return true;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? s.npos : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return out;
}

}  // namespace

util::Result<std::optional<int64_t>> parse_sacct_time(std::string_view text) {
  if (text.empty() || text == "Unknown" || text == "None") return std::optional<int64_t>();
  int64_t f[6] = {};
  const bool shape = text.size() == 19 && text[4] == '-' && text[7] == '-' &&
                     (text[10] == 'T' || text[10] == ' ') && text[13] == ':' && text[16] == ':';
  const size_t at[6] = {0, 5, 8, 11, 14, 17};
  const size_t len[6] = {4, 2, 2, 2, 2, 2};
  bool ok = shape;
  for (int i = 0; ok && i < 6; ++i) ok = digits_value(text.substr(at[i], len[i]), len[i], f[i]);
  if (!ok || f[0] < 1970 || f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 ||
      f[4] > 59 || f[5] > 60) {
    return util::invalid_argument(
        fmt::format("expected a time like 2024-01-02T03:04:05 (or Unknown/None), got '{}'", text));
  }
  std::tm tm{};
  tm.tm_year = static_cast<int>(f[0] - 1900);
  tm.tm_mon = static_cast<int>(f[1] - 1);
  tm.tm_mday = static_cast<int>(f[2]);
  tm.tm_hour = static_cast<int>(f[3]);
  tm.tm_min = static_cast<int>(f[4]);
  tm.tm_sec = static_cast<int>(f[5]);
  return std::optional<int64_t>(static_cast<int64_t>(timegm(&tm)));
}

util::Result<std::optional<int64_t>> parse_slurm_timelimit(std::string_view text) {
  if (text.empty() || text == "UNLIMITED" || text == "INFINITE" || text == "Partition_Limit") {
    return std::optional<int64_t>();
  }
  const auto bad = [&] {
    return util::invalid_argument(
        fmt::format("expected a time limit like 30:00, 04:00:00 or 2-00:00:00 (or UNLIMITED, "
                    "Partition_Limit), got '{}'",
                    text));
  };
  int64_t days = 0;
  std::string_view clock = text;
  const size_t dash = text.find('-');
  if (dash != std::string_view::npos) {
    if (!digits_value(text.substr(0, dash), 6, days) || days > kMaxLimitDays) return bad();
    clock = text.substr(dash + 1);
  }
  const std::vector<std::string_view> parts = split(clock, ':');
  if (parts.size() > 3) return bad();
  int64_t v[3] = {};
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!digits_value(parts[i], 9, v[i])) return bad();
  }
  int64_t seconds = 0;
  if (dash != std::string_view::npos) {  // D-HH, D-HH:MM, D-HH:MM:SS
    seconds = days * 86400 + v[0] * 3600 + v[1] * 60 + v[2];
  } else if (parts.size() == 3) {  // HH:MM:SS
    seconds = v[0] * 3600 + v[1] * 60 + v[2];
  } else {  // MM, MM:SS
    seconds = v[0] * 60 + v[1];
  }
  if (seconds <= 0) return bad();
  return std::optional<int64_t>(seconds);
}

util::Result<TresGpus> parse_tres_gpus(std::string_view tres) {
  TresGpus out;
  bool untyped = false;
  int64_t typed_sum = 0;
  int typed_kinds = 0;
  std::string first_type;
  if (tres.empty()) return out;
  for (std::string_view item : split(tres, ',')) {
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    if (!key.starts_with("gres/gpu")) continue;
    const std::string_view rest = key.substr(8);
    if (!rest.empty() && rest[0] != ':') continue;  // gres/gpumem, gres/gpuutil, ...
    int64_t n = 0;
    if (eq == std::string_view::npos || !digits_value(item.substr(eq + 1), 9, n)) {
      return util::invalid_argument(fmt::format(
          "expected a GPU count like gres/gpu=4 or gres/gpu:a100=4 in '{}', got '{}'", tres, item));
    }
    if (rest.empty()) {
      untyped = true;
      out.count = n;
      continue;
    }
    const std::string_view type = rest.substr(1);
    typed_sum += n;
    if (typed_kinds == 0 || type != first_type) {
      if (typed_kinds == 0) first_type = std::string(type);
      ++typed_kinds;
    }
  }
  if (!untyped) out.count = typed_sum;
  if (typed_kinds == 1) out.type = first_type;
  return out;
}

std::string_view sacct_state_word(std::string_view state) {
  const size_t space = state.find(' ');
  std::string_view word = state.substr(0, space);
  while (word.ends_with('+')) word.remove_suffix(1);
  return word;
}

}  // namespace trainyard::sim
