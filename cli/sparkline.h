// Small terminal charts: a series as one character per point, in Unicode block characters
// (▁▂▃▄▅▆▇█) or, where the terminal's locale is not UTF-8, in plain ASCII. Used by `show` (a
// job's per-minute GPU use) and `top` (each GPU's recent utilization). Pure but for
// utf8_locale(), which reads the environment.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace trainyard::cli {

using Series = std::vector<std::optional<double>>;

struct SparklineOptions {
  bool ascii = false;
  // The values drawn as the lowest and the highest bar; unset: the series' own min and max.
  std::optional<double> lo, hi;
  size_t width = 60;  // at most this many characters: longer series are averaged into buckets
};

// One character per point; a missing point is a space.
std::string sparkline(std::span<const std::optional<double>> values,
                      const SparklineOptions& options = {});

// `values` in at most `width` buckets of consecutive points, each the mean of its known values.
Series downsample(std::span<const std::optional<double>> values, size_t width);

struct SeriesStats {
  std::optional<double> min, max, mean;
};
SeriesStats series_stats(std::span<const std::optional<double>> values);

// Whether a locale named by these variables (the first set one wins, as in POSIX) uses UTF-8.
bool utf8_locale(const char* lc_all, const char* lc_ctype, const char* lang);
// The same for this process's environment.
bool utf8_terminal();

}  // namespace trainyard::cli
