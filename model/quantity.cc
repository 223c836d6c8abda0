#include "model/quantity.h"

#include <charconv>
#include <cmath>

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

}  // namespace

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
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty() || n < 0) {
    return util::invalid_argument(
        fmt::format("'{}' is not a memory quantity; write a whole number with an optional suffix "
                    "Ki, Mi, Gi, Ti (powers of 2) or k, M, G, T, e.g. 32Gi",
                    text));
  }
  if (n > INT64_MAX / factor) return util::invalid_argument(fmt::format("'{}' is too large", text));
  return Bytes(n * factor);
}

util::Result<CpuMilli> parse_cpu(std::string_view text) {
  if (text.ends_with('m')) {
    int64_t n = 0;
    auto digits = text.substr(0, text.size() - 1);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc() && ptr == digits.data() + digits.size() && !digits.empty() && n >= 0) {
      return CpuMilli(n);
    }
  } else {
    double cores = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), cores);
    if (ec == std::errc() && ptr == text.data() + text.size() && !text.empty() && cores >= 0 &&
        cores < 1e12) {
      double milli = cores * 1000.0;
      if (std::abs(milli - std::round(milli)) < 1e-6) return CpuMilli(std::llround(milli));
    }
  }
  return util::invalid_argument(fmt::format(
      "'{}' is not a CPU quantity; write cores (\"8\", \"2.5\") or milli-cores (\"500m\")", text));
}

std::string format_bytes(Bytes b) {
  const int64_t v = b.value();
  if (v % (int64_t{1} << 30) == 0) return fmt::format("{}Gi", v >> 30);
  if (v % (int64_t{1} << 20) == 0) return fmt::format("{}Mi", v >> 20);
  return fmt::format("{}", v);
}

}  // namespace trainyard::model
