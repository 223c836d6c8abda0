// A small, dependency-free SVG line-chart writer for the simulator's plots (queue length over
// time, JCT CDFs, allocation): standalone files a person opens in a browser.
// Pure and deterministic: same series and options, same bytes. Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "util/status.h"

namespace trainyard::sim {

// One line on a chart. x and y pair up by index; extra elements of the longer one are ignored.
struct Series {
  std::string name;
  std::vector<double> x, y;
};

struct ChartOptions {
  std::string title, x_label, y_label;  // on time axes the caller names the unit: "time (h)"
  bool log_x = false;                   // decade ticks (10, 100, 1k, ...); x <= 0 is skipped
  double width = 800, height = 500;     // pixels of the whole document, clamped to >= 240x160
  std::optional<double> y_min, y_max;   // fixed y bounds; unset ones snap to nice tick values
  bool step = false;  // draw as a step function (value holds until the next x): queue length
};

// Returns a complete SVG document: title, axes with 1-2-5 ticks and grid lines, axis labels,
// and a legend with one colour per series (Okabe-Ito palette; dashed after the 7th series).
// Contract: points with a non-finite value, or one beyond +-1e300, are skipped; lines are clipped
// to the plot box (a line leaving and re-entering becomes several <polyline>s in the series' <g>);
// an empty series gets a legend entry and no line; a series of many points is reduced to
// first/min/max/last per pixel column, so the file stays small and the extremes stay visible.
std::string render_line_chart(const std::vector<Series>& series, const ChartOptions& options);

// Empirical CDF of `values`: x sorted ascending, y = rank / n in (0, 1]. Non-finite values
// are dropped before ranking. Draw it with ChartOptions::step for the exact staircase.
Series cdf_series(std::string name, std::vector<double> values);

// Writes `content` to `path` atomically: a temp file in the same directory, then rename.
// Errors name the path: NotFound when the directory is missing, PermissionDenied when it is
// not writable, Internal for a failed write.
util::Status write_file(const std::string& path, const std::string& content);

}  // namespace trainyard::sim
