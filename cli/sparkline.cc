#include "cli/sparkline.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace trainyard::cli {
namespace {

constexpr const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
constexpr const char kAscii[] = "_.-:=+*#";
constexpr int kLevels = 8;

}  // namespace

Series downsample(std::span<const std::optional<double>> values, size_t width) {
  if (width == 0 || values.size() <= width) return Series(values.begin(), values.end());
  Series out;
  out.reserve(width);
  for (size_t b = 0; b < width; ++b) {
    const size_t from = b * values.size() / width;
    const size_t to = (b + 1) * values.size() / width;
    double sum = 0;
    int n = 0;
    for (size_t i = from; i < to; ++i)
      if (values[i]) sum += *values[i], ++n;
    out.push_back(n > 0 ? std::optional<double>(sum / n) : std::nullopt);
  }
  return out;
}

SeriesStats series_stats(std::span<const std::optional<double>> values) {
  SeriesStats s;
  double sum = 0;
  int n = 0;
  for (const auto& v : values) {
    if (!v || !std::isfinite(*v)) continue;
    s.min = s.min ? std::min(*s.min, *v) : *v;
    s.max = s.max ? std::max(*s.max, *v) : *v;
    sum += *v;
    ++n;
  }
  if (n > 0) s.mean = sum / n;
  return s;
}

std::string sparkline(std::span<const std::optional<double>> values,
                      const SparklineOptions& options) {
  const Series points = downsample(values, options.width);
  const SeriesStats stats = series_stats(points);
  const double lo = options.lo.value_or(stats.min.value_or(0));
  const double hi = options.hi.value_or(stats.max.value_or(0));
  std::string out;
  for (const auto& v : points) {
    if (!v || !std::isfinite(*v)) {
      out += ' ';
      continue;
    }
    // A flat series sits on the lowest bar; values outside [lo, hi] are clamped.
    const double share = hi > lo ? std::clamp((*v - lo) / (hi - lo), 0.0, 1.0) : 0.0;
    const int level = std::min(kLevels - 1, static_cast<int>(std::lround(share * (kLevels - 1))));
    if (options.ascii) {
      out += kAscii[level];
    } else {
      out += kBlocks[level];
    }
  }
  return out;
}

bool utf8_locale(const char* lc_all, const char* lc_ctype, const char* lang) {
  const char* name = nullptr;
  for (const char* v : {lc_all, lc_ctype, lang}) {
    if (v != nullptr && *v != '\0') {
      name = v;
      break;
    }
  }
  if (name == nullptr) return false;  // the C locale: ASCII
  std::string lower;
  for (const char* p = name; *p != '\0'; ++p)
    if (*p != '-' && *p != '_')
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  return lower.find("utf8") != std::string::npos;
}

bool utf8_terminal() {
  return utf8_locale(std::getenv("LC_ALL"), std::getenv("LC_CTYPE"), std::getenv("LANG"));
}

}  // namespace trainyard::cli
