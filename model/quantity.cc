#include "model/quantity.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace trainyard::model {
namespace {

struct Suffix {
  std::string_view text;
  int64_t factor;
};
constexpr Suffix kSuffixes[] = {
    {"Ki", int64_t{1} << 10},
    {"Mi", int64_t{1} << 20},
    {"Gi", int64_t{1} << 30},
    {"Ti", int64_t{1} << 40},
    {"k", 1000},
    {"K", 1000},
    {"M", 1000000},
    {"G", 1000000000},
    {"T", 1000000000000},
};

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

PlainDecimal parse_plain_decimal(std::string_view text) {
  PlainDecimal out;
  const size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  // ".5" is a number (YAML and Kubernetes read it so), "5." and "." are not.
  if (!whole.empty() && !is_digits(whole)) return out;
  if (dot == std::string_view::npos ? whole.empty() : !is_digits(fraction)) return out;
  out.ok = true;
  for (char c : whole) {
    out.milli = out.milli * 10 + (c - '0');
    if (out.milli >= kMaxPlainMilli / 1000) {
      out.milli = kMaxPlainMilli;
      return out;
    }
  }
  out.milli *= 1000;
  int64_t scale = 100;
  for (char c : fraction) {
    if (scale > 0) {
      out.milli += (c - '0') * scale;
      scale /= 10;
    } else if (c != '0') {
      out.too_fine = true;
    }
  }
  return out;
}

util::Result<Bytes> parse_bytes(std::string_view text) {
  int64_t factor = 1;
  std::string_view digits = text;
  for (const auto& s : kSuffixes) {
    if (text.size() > s.text.size() && text.ends_with(s.text)) {
      factor = s.factor;
      digits = text.substr(0, text.size() - s.text.size());
      break;
    }
  }
  int64_t n = 0;
  // from_chars alone would take "-0"; only digits are a quantity.
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (!is_digits(digits) || ec != std::errc() || ptr != digits.data() + digits.size()) {
    return util::invalid_argument(
        fmt::format("'{}' is not a memory quantity; write a whole number with an optional suffix "
                    "Ki, Mi, Gi, Ti (powers of 2) or k, M, G, T, e.g. 32Gi",
                    text));
  }
  if (n > INT64_MAX / factor) return util::invalid_argument(fmt::format("'{}' is too large", text));
  return Bytes(n * factor);
}

util::Result<CpuMilli> parse_cpu(std::string_view text) {
  // Far above any machine, low enough that sums over many workers cannot overflow int64.
  constexpr int64_t kMaxCpuMilli = int64_t{1'000'000'000'000'000};
  if (text.ends_with('m')) {
    const std::string_view digits = text.substr(0, text.size() - 1);
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (is_digits(digits) && ec == std::errc() && ptr == digits.data() + digits.size() &&
        n < kMaxCpuMilli)
      return CpuMilli(n);
  } else if (const PlainDecimal d = parse_plain_decimal(text);
             d.ok && !d.too_fine && d.milli < kMaxCpuMilli) {
    return CpuMilli(d.milli);
  }
  return util::invalid_argument(
      fmt::format("'{}' is not a CPU quantity; write cores as plain decimal digits (\"8\", "
                  "\"2.5\") or milli-cores (\"500m\")",
                  text));
}

std::string format_bytes(Bytes b) {
  const int64_t v = b.value();
  if (v % (int64_t{1} << 30) == 0) return fmt::format("{}Gi", v >> 30);
  if (v % (int64_t{1} << 20) == 0) return fmt::format("{}Mi", v >> 20);
  return fmt::format("{}", v);
}

}  // namespace trainyard::model
