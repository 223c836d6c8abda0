// SVG line charts. Data are mapped to a pixel box once, reduced to first/min/max/last per
// pixel column (M4), clipped with Liang-Barsky, and printed with one decimal through
// std::to_chars, so output is byte-stable and locale-independent.
#include "sim/svg_plot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string_view>
#include <system_error>

namespace trainyard::sim {
namespace {

// Okabe-Ito, without its yellow (unreadable on white); series past the 7th also get a dash.
constexpr std::string_view kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                         "#CC79A7", "#56B4E9", "#000000"};
constexpr std::string_view kDashes[] = {"", "7 3", "2 3"};
constexpr size_t kPaletteSize = std::size(kPalette);
constexpr double kCharWidth = 7.0;  // average advance of a 12px sans-serif glyph
constexpr size_t kMaxLegendBytes = 32;
constexpr double kFarAway = 1e6;         // clamp, in plot sizes, so pixel maths stays finite
constexpr double kMaxMagnitude = 1e300;  // beyond it spans overflow; such points are skipped

struct Point {
  double x, y;
  bool operator==(const Point&) const = default;
};
struct PlotBox {
  double left, top, right, bottom;
};
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;
  std::vector<std::string> labels;
};
struct DataRange {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
};

std::string xml_escape(std::string_view text) {
  static constexpr std::pair<char, std::string_view> kEntities[] = {
      {'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&apos;"}};
  std::string out;
  for (char c : text) {
    auto it = std::find_if(std::begin(kEntities), std::end(kEntities),
                           [c](const auto& entity) { return entity.first == c; });
    const bool forbidden =
        static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r';
    if (it != std::end(kEntities))
      out += it->second;
    else
      out += forbidden ? '?' : c;  // XML 1.0 forbids these even as character references
  }
  return out;
}

// Fixed-point with trailing zeros stripped ("1.50" -> "1.5", "-0" -> "0").
std::string fixed(double v, int decimals) {
  char buf[400];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  if (ec != std::errc()) end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  std::string s(buf, end);
  if (s.find('.') != std::string::npos && s.find('e') == std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

std::string px(double v) {
  return fixed(v, 1);
}

// A tick label with the decimals its step needs; large values shortened to k/M/G/T.
std::string format_tick(double v, double step) {
  if (std::abs(v) < step * 1e-9) v = 0;
  if (std::abs(v) >= 1e15 || (v != 0 && step < 1e-6)) {
    char buf[64];
    return std::string(buf,
                       std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 3).ptr);
  }
  static constexpr std::pair<double, std::string_view> kUnits[] = {
      {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  double scale = 1;
  std::string_view suffix;
  for (const auto& [unit, name] : kUnits) {
    if (std::abs(v) >= unit) {
      scale = unit;
      suffix = name;
      break;
    }
  }
  int decimals = static_cast<int>(std::ceil(-std::log10(step / scale) - 1e-9));
  return fixed(v / scale, std::clamp(decimals, 0, 6)) + std::string(suffix);
}

// The 1-2-5 step that splits `span` into about `target` intervals.
double nice_step(double span, int target) {
  double raw = span / std::max(target, 1);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double mult = norm <= 1 + 1e-9 ? 1 : norm <= 2 + 1e-9 ? 2 : norm <= 5 + 1e-9 ? 5 : 10;
  return mult * mag;
}

// Widens an empty or inverted range so the axis always has a span.
// A span below 1e-9 of the magnitude counts as empty: it could not be labelled anyway.
void widen_degenerate(double& lo, double& hi, bool fixed_lo, bool fixed_hi) {
  if (hi - lo > 1e-9 * std::max(std::abs(lo), std::abs(hi))) return;
  if (fixed_hi && !fixed_lo) {
    lo = hi - std::max(1.0, std::abs(hi));
  } else if (!fixed_lo && !fixed_hi && hi != 0) {  // constant data: show it against zero
    lo = std::min(0.0, 2 * lo);
    hi = std::max(0.0, 2 * hi);
  } else {
    hi = lo + std::max(1.0, std::abs(lo));
  }
}

// Linear axis; bounds not fixed by the caller snap outward to a tick.
Axis linear_axis(double lo, double hi, std::optional<double> fixed_lo,
                 std::optional<double> fixed_hi, int target) {
  if (fixed_lo) lo = *fixed_lo;
  if (fixed_hi) hi = *fixed_hi;
  widen_degenerate(lo, hi, fixed_lo.has_value(), fixed_hi.has_value());
  const double step = nice_step(hi - lo, target);
  if (!fixed_lo) lo = std::floor(lo / step + 1e-9) * step;
  if (!fixed_hi) hi = std::ceil(hi / step - 1e-9) * step;
  Axis axis{.lo = lo, .hi = hi};
  const double first = std::ceil(lo / step - 1e-9);
  for (double k = first; k * step <= hi + step * 1e-9 && k < first + 100; ++k) {
    axis.ticks.push_back(k * step);
    axis.labels.push_back(format_tick(k * step, step));
  }
  return axis;
}

// Log axis over the data range: decade ticks (every n-th past 8 decades); inside a single
// decade, 1-2-5 multiples; inside less, linear ticks.
Axis log_axis(double lo, double hi) {
  if (!(hi > lo)) {
    lo /= std::sqrt(10.0);
    hi *= std::sqrt(10.0);
  }
  Axis axis{.lo = lo, .hi = hi, .log = true};
  const int e0 = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
  const int e1 = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
  const int stride = (e1 - e0 + 8) / 8;
  for (int e = e0; e <= e1; e += stride) axis.ticks.push_back(std::pow(10.0, e));
  if (axis.ticks.size() < 2) {
    axis.ticks.clear();
    for (int e = e0 - 1; e <= e1; ++e) {
      for (double m : {1.0, 2.0, 5.0}) {
        double v = m * std::pow(10.0, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) axis.ticks.push_back(v);
      }
    }
  }
  if (axis.ticks.size() < 2) {
    Axis lin = linear_axis(lo, hi, lo, hi, 4);
    lin.log = true;
    return lin;
  }
  for (double v : axis.ticks) {
    axis.labels.push_back(format_tick(v, std::pow(10.0, std::floor(std::log10(v) + 1e-9))));
  }
  return axis;
}

// Position of v along the axis, 0 at lo and 1 at hi, clamped far outside to stay finite.
double to_unit(const Axis& axis, double v) {
  double u =
      axis.log ? (std::log10(v) - std::log10(axis.lo)) / (std::log10(axis.hi) - std::log10(axis.lo))
               : (v - axis.lo) / (axis.hi - axis.lo);
  return std::clamp(u, -kFarAway, kFarAway);
}

bool sane(double v) {
  return std::isfinite(v) && std::abs(v) <= kMaxMagnitude;
}
bool usable(double x, double y, bool log_x) {
  return sane(x) && sane(y) && (!log_x || x > 0);
}

DataRange data_range(const std::vector<Series>& series, bool log_x) {
  DataRange r;
  for (const Series& s : series) {
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!usable(s.x[i], s.y[i], log_x)) continue;
      r.x_lo = std::min(r.x_lo, s.x[i]);
      r.x_hi = std::max(r.x_hi, s.x[i]);
      r.y_lo = std::min(r.y_lo, s.y[i]);
      r.y_hi = std::max(r.y_hi, s.y[i]);
    }
  }
  if (r.x_lo > r.x_hi) {
    r.x_lo = log_x ? 1 : 0;
    r.x_hi = log_x ? 10 : 1;
  }
  if (r.y_lo > r.y_hi) {
    r.y_lo = 0;
    r.y_hi = 1;
  }
  return r;
}

// Pixel points of a series; a step series holds each y until the next x.
std::vector<Point> project(const Series& s, const Axis& xa, const Axis& ya, const PlotBox& box,
                           bool step) {
  std::vector<Point> pts;
  for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
    if (!usable(s.x[i], s.y[i], xa.log)) continue;
    Point p{box.left + to_unit(xa, s.x[i]) * (box.right - box.left),
            box.bottom - to_unit(ya, s.y[i]) * (box.bottom - box.top)};
    if (step && !pts.empty()) pts.push_back({p.x, pts.back().y});
    pts.push_back(p);
  }
  return pts;
}

// M4 reduction: for each run of consecutive points in one pixel column keep the first, the
// lowest, the highest and the last, which draws the same pixels as the full line.
std::vector<Point> reduce_per_column(const std::vector<Point>& pts, double plot_width) {
  if (static_cast<double>(pts.size()) <= 4 * plot_width) return pts;
  std::vector<Point> out;
  for (size_t begin = 0, end = 0; begin < pts.size(); begin = end) {
    const double column = std::floor(pts[begin].x);
    size_t lowest = begin, highest = begin;
    for (end = begin; end < pts.size() && std::floor(pts[end].x) == column; ++end) {
      if (pts[end].y > pts[lowest].y) lowest = end;  // pixel y grows downwards
      if (pts[end].y < pts[highest].y) highest = end;
    }
    size_t keep[] = {begin, std::min(lowest, highest), std::max(lowest, highest), end - 1};
    for (size_t k = 0; k < 4; ++k) {
      if (k == 0 || keep[k] != keep[k - 1]) out.push_back(pts[keep[k]]);
    }
  }
  return out;
}

// Liang-Barsky: shortens segment a-b to its part inside the box; false when none is.
bool clip_segment(Point& a, Point& b, const PlotBox& box) {
  const double dx = b.x - a.x, dy = b.y - a.y;
  const double p[] = {-dx, dx, -dy, dy};
  const double q[] = {a.x - box.left, box.right - a.x, a.y - box.top, box.bottom - a.y};
  double t0 = 0, t1 = 1;
  for (int side = 0; side < 4; ++side) {
    if (p[side] == 0) {
      if (q[side] < 0) return false;
      continue;
    }
    const double t = q[side] / p[side];
    if (p[side] < 0)
      t0 = std::max(t0, t);
    else
      t1 = std::min(t1, t);
    if (t0 > t1) return false;
  }
  const Point from = a;
  a = {from.x + t0 * dx, from.y + t0 * dy};
  b = {from.x + t1 * dx, from.y + t1 * dy};
  return true;
}

// The visible pieces of a line: a new piece starts wherever the line re-enters the box.
std::vector<std::vector<Point>> clip_to_box(const std::vector<Point>& pts, const PlotBox& box) {
  std::vector<std::vector<Point>> pieces;
  std::vector<Point> piece;
  auto flush = [&] {
    if (!piece.empty()) pieces.push_back(std::move(piece));
    piece.clear();
  };
  if (pts.size() == 1) {
    Point a = pts[0], b = pts[0];
    if (clip_segment(a, b, box)) pieces.push_back({a, b});  // a dot, through the round cap
  }
  for (size_t i = 1; i < pts.size(); ++i) {
    Point a = pts[i - 1], b = pts[i];
    if (!clip_segment(a, b, box)) {
      flush();
      continue;
    }
    if (piece.empty() || !(a == pts[i - 1])) {
      flush();
      piece.push_back(a);
    }
    piece.push_back(b);
    if (!(b == pts[i])) flush();
  }
  flush();
  return pieces;
}

std::string truncate_name(const std::string& name) {
  if (name.size() <= kMaxLegendBytes) return name;
  size_t cut = kMaxLegendBytes - 1;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  return name.substr(0, cut) + "\u2026";
}

std::string series_style(size_t idx, std::string_view width) {
  std::string style = "fill=\"none\" stroke=\"" + std::string(kPalette[idx % kPaletteSize]) +
                      "\" stroke-width=\"" + std::string(width) +
                      "\" stroke-linejoin=\"round\" stroke-linecap=\"round\"";
  std::string_view dash = kDashes[(idx / kPaletteSize) % std::size(kDashes)];
  if (!dash.empty()) style += " stroke-dasharray=\"" + std::string(dash) + "\"";
  return style;
}

void emit_text(std::string& out, std::string_view cls, double x, double y, std::string_view anchor,
               std::string_view text, std::string_view extra = "") {
  out += "<text class=\"" + std::string(cls) + "\" x=\"" + px(x) + "\" y=\"" + px(y) +
         "\" text-anchor=\"" + std::string(anchor) + "\"" + std::string(extra) + ">" +
         xml_escape(text) + "</text>\n";
}

void emit_line(std::string& out, Point a, Point b, std::string_view stroke) {
  out += "<line x1=\"" + px(a.x) + "\" y1=\"" + px(a.y) + "\" x2=\"" + px(b.x) + "\" y2=\"" +
         px(b.y) + "\" stroke=\"" + std::string(stroke) + "\"/>\n";
}

// Grid lines, tick marks and tick labels of both axes, then the frame.
void emit_axes(std::string& out, const PlotBox& box, const Axis& xa, const Axis& ya) {
  for (size_t i = 0; i < xa.ticks.size(); ++i) {
    double x = box.left + to_unit(xa, xa.ticks[i]) * (box.right - box.left);
    emit_line(out, {x, box.top}, {x, box.bottom}, "#e6e6e6");
    emit_line(out, {x, box.bottom}, {x, box.bottom + 5}, "#333");
    emit_text(out, "x-tick", x, box.bottom + 18, "middle", xa.labels[i]);
  }
  for (size_t i = 0; i < ya.ticks.size(); ++i) {
    double y = box.bottom - to_unit(ya, ya.ticks[i]) * (box.bottom - box.top);
    emit_line(out, {box.left, y}, {box.right, y}, "#e6e6e6");
    emit_line(out, {box.left - 5, y}, {box.left, y}, "#333");
    emit_text(out, "y-tick", box.left - 8, y + 4, "end", ya.labels[i]);
  }
  out += "<rect class=\"plot-area\" x=\"" + px(box.left) + "\" y=\"" + px(box.top) + "\" width=\"" +
         px(box.right - box.left) + "\" height=\"" + px(box.bottom - box.top) +
         "\" fill=\"none\" stroke=\"#333\"/>\n";
}

void emit_series(std::string& out, size_t idx, const Series& s, const std::vector<Point>& pts,
                 const PlotBox& box) {
  out += "<g class=\"series\" " + series_style(idx, "1.5") + "><title>" + xml_escape(s.name) +
         "</title>\n";
  for (const auto& piece : clip_to_box(reduce_per_column(pts, box.right - box.left), box)) {
    out += "<polyline points=\"";
    std::string last;
    for (size_t i = 0; i < piece.size(); ++i) {
      std::string xy = px(piece[i].x) + "," + px(piece[i].y);
      if (xy == last && i + 1 != piece.size()) continue;  // keeps a one-point piece a dot
      if (!last.empty()) out += ' ';
      out += xy;
      last = std::move(xy);
    }
    out += "\"/>\n";
  }
  out += "</g>\n";
}

void emit_legend(std::string& out, const std::vector<Series>& series, const PlotBox& box) {
  const double x = box.right + 16;
  for (size_t i = 0; i < series.size(); ++i) {
    const double y = box.top + 12 + 18 * static_cast<double>(i);
    out += "<g class=\"legend-entry\"><title>" + xml_escape(series[i].name) + "</title>\n";
    out += "<line x1=\"" + px(x) + "\" y1=\"" + px(y - 4) + "\" x2=\"" + px(x + 24) + "\" y2=\"" +
           px(y - 4) + "\" " + series_style(i, "2.5") + "/>\n";
    emit_text(out, "legend", x + 30, y, "start", truncate_name(series[i].name));
    out += "</g>\n";
  }
}

void emit_titles(std::string& out, const ChartOptions& o, const PlotBox& box, double width) {
  const double mid_x = (box.left + box.right) / 2, mid_y = (box.top + box.bottom) / 2;
  if (!o.title.empty()) {
    emit_text(out, "title", width / 2, 26, "middle", o.title,
              " font-size=\"16\" font-weight=\"bold\"");
  }
  if (!o.x_label.empty()) emit_text(out, "x-label", mid_x, box.bottom + 40, "middle", o.x_label);
  if (!o.y_label.empty()) {
    emit_text(out, "y-label", 24, mid_y, "middle", o.y_label,
              " transform=\"rotate(-90 24 " + px(mid_y) + ")\"");
  }
}

int target_ticks(double pixels, double per_tick) {
  return std::clamp(static_cast<int>(pixels / per_tick), 2, 10);
}

std::optional<double> sane_or_none(std::optional<double> v) {
  return v && sane(*v) ? v : std::nullopt;
}

}  // namespace

std::string render_line_chart(const std::vector<Series>& series, const ChartOptions& options) {
  const double w = std::round(std::isfinite(options.width) ? std::max(options.width, 240.0) : 800);
  const double h =
      std::round(std::isfinite(options.height) ? std::max(options.height, 160.0) : 500);
  const DataRange range = data_range(series, options.log_x);

  // 1. Vertical layout and the y axis: its label widths decide the left margin.
  PlotBox box{0, options.title.empty() ? 16.0 : 40.0, 0, h - (options.x_label.empty() ? 30 : 52)};
  const Axis ya = linear_axis(range.y_lo, range.y_hi, sane_or_none(options.y_min),
                              sane_or_none(options.y_max), target_ticks(box.bottom - box.top, 60));
  double label_chars = 0, name_chars = 0;
  for (const auto& label : ya.labels)
    label_chars = std::max(label_chars, static_cast<double>(label.size()));
  for (const auto& s : series)
    name_chars = std::max(name_chars, static_cast<double>(truncate_name(s.name).size()));
  box.left = std::round(18 + (options.y_label.empty() ? 0 : 22) + kCharWidth * label_chars);
  const double legend_width = series.empty() ? 0 : 46 + kCharWidth * name_chars;
  box.right = std::max(box.left + 80, std::round(w - 16 - legend_width));

  // 2. The x axis, with as many ticks as the plot width has room for.
  const Axis xa = options.log_x ? log_axis(range.x_lo, range.x_hi)
                                : linear_axis(range.x_lo, range.x_hi, std::nullopt, std::nullopt,
                                              target_ticks(box.right - box.left, 100));

  // 3. Document: background, axes, titles, lines, legend.
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(w) + "\" height=\"" + px(h) +
         "\" viewBox=\"0 0 " + px(w) + " " + px(h) +
         "\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#222\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  emit_axes(out, box, xa, ya);
  emit_titles(out, options, box, w);
  for (size_t i = 0; i < series.size(); ++i) {
    emit_series(out, i, series[i], project(series[i], xa, ya, box, options.step), box);
  }
  emit_legend(out, series, box);
  out += "</svg>\n";
  return out;
}

Series cdf_series(std::string name, std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  std::sort(values.begin(), values.end());
  Series s{.name = std::move(name), .x = std::move(values), .y = {}};
  s.y.reserve(s.x.size());
  for (size_t i = 0; i < s.x.size(); ++i) {
    s.y.push_back(static_cast<double>(i + 1) / static_cast<double>(s.x.size()));
  }
  return s;
}

util::Status write_file(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  if (path.empty()) return util::invalid_argument("write_file: the path is empty");
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return util::not_found("cannot write " + path + ": directory " + dir.string() +
                           " does not exist; create it first");
  }
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    const int err = errno;
    const bool denied = err == EACCES || err == EPERM || err == EROFS;
    return util::Status(denied ? util::StatusCode::PermissionDenied : util::StatusCode::Internal,
                        "cannot write " + path + ": directory " + dir.string() +
                            " is not writable (" + std::generic_category().message(err) + ")");
  }
  ::fchmod(fd, 0644);  // mkstemp makes 0600; plots are meant to be shared
  int write_err = 0;
  for (size_t done = 0; done < content.size() && write_err == 0;) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n > 0)
      done += static_cast<size_t>(n);
    else if (n == 0 || errno != EINTR)
      write_err = n == 0 ? EIO : errno;
  }
  const bool synced = write_err == 0 && ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (write_err != 0 || !synced || !closed || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = write_err != 0 ? write_err : errno;
    ::unlink(tmp.c_str());
    return util::internal_error("cannot write " + path + ": " +
                                std::generic_category().message(err));
  }
  return util::Status::ok();
}

}  // namespace trainyard::sim
