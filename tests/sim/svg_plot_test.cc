#include "sim/svg_plot.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace trainyard::sim {
namespace {

// False when an attribute name appears twice in one start tag (XML forbids it).
bool unique_attributes(const std::string& tag) {
  static const std::regex kAttribute("\\s([-:a-zA-Z]+)=\"[^\"]*\"");
  std::set<std::string> names;
  for (std::sregex_iterator it(tag.begin(), tag.end(), kAttribute), end; it != end; ++it) {
    if (!names.insert((*it)[1]).second) return false;
  }
  return true;
}

// "" when the document is one <svg> root whose tags nest and close in order, with quoted
// attributes and only the five predefined entities; otherwise what is wrong and where.
std::string check_well_formed(const std::string& doc) {
  static const std::regex kEntity("^&(amp|lt|gt|quot|apos);");
  std::vector<std::string> open;
  int roots = 0;
  for (size_t i = 0; i < doc.size();) {
    if (doc[i] == '&' && !std::regex_search(doc.substr(i, 8), kEntity)) {
      return "bad entity at " + std::to_string(i);
    }
    if (doc[i] != '<') {
      if (open.empty() && !std::isspace(static_cast<unsigned char>(doc[i]))) {
        return "text outside the root at " + std::to_string(i);
      }
      ++i;
      continue;
    }
    if (i == 0 && doc.compare(0, 5, "<?xml") == 0) {
      i = doc.find("?>") + 2;
      continue;
    }
    size_t end = i + 1;
    bool quoted = false;
    for (; end < doc.size() && (quoted || doc[end] != '>'); ++end) {
      if (doc[end] == '"') quoted = !quoted;
      if (doc[end] == '<') return "raw '<' inside a tag at " + std::to_string(end);
      if (doc[end] == '&' && !std::regex_search(doc.substr(end, 8), kEntity)) {
        return "bad entity in a tag at " + std::to_string(end);
      }
    }
    if (end == doc.size()) return "unterminated tag at " + std::to_string(i);
    const std::string tag = doc.substr(i + 1, end - i - 1);
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "mismatched </" + tag.substr(1);
      open.pop_back();
    } else {
      if (open.empty() && ++roots > 1) return "second root element <" + tag;
      if (!unique_attributes(tag)) return "repeated attribute in <" + tag;
      if (tag.back() != '/') open.push_back(tag.substr(0, tag.find_first_of(" \n\t")));
    }
    i = end + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return roots == 1 ? "" : "no root element";
}

std::vector<std::string> texts_of_class(const std::string& svg, const std::string& cls) {
  std::regex re("<text class=\"" + cls + "\"[^>]*>([^<]*)</text>");
  std::vector<std::string> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end; ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

struct Pt {
  double x, y;
};

std::vector<std::vector<Pt>> polylines(const std::string& svg) {
  std::regex re("<polyline points=\"([^\"]*)\"");
  std::vector<std::vector<Pt>> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end; ++it) {
    std::istringstream in((*it)[1].str());
    std::vector<Pt> line;
    Pt p;
    char comma;
    while (in >> p.x >> comma >> p.y) line.push_back(p);
    out.push_back(line);
  }
  return out;
}

struct Box {
  double left, top, right, bottom;
};

Box plot_area(const std::string& svg) {
  std::smatch m;
  std::regex re(
      "class=\"plot-area\" x=\"([-0-9.]+)\" y=\"([-0-9.]+)\" width=\"([0-9.]+)\" "
      "height=\"([0-9.]+)\"");
  EXPECT_TRUE(std::regex_search(svg, m, re));
  double x = std::stod(m[1]), y = std::stod(m[2]);
  return {x, y, x + std::stod(m[3]), y + std::stod(m[4])};
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

Series ramp(std::string name, double from, double to, int n) {
  Series s{.name = std::move(name), .x = {}, .y = {}};
  for (int i = 0; i < n; ++i) {
    s.x.push_back(from + (to - from) * i / (n - 1));
    s.y.push_back(from + (to - from) * i / (n - 1));
  }
  return s;
}

TEST(RenderLineChart, WritesWellFormedDocumentWithEscapedTextAndOneLinePerSeries) {
  std::vector<Series> series = {ramp("fifo", 0, 10, 5),
                                {.name = "a<b&c", .x = {}, .y = {}},
                                ramp("\"gavel\" 'las'", 1, 3, 4)};
  std::string svg = render_line_chart(
      series, {.title = "Queue <length> & wait", .x_label = "time (h)", .y_label = "jobs"});
  EXPECT_EQ(check_well_formed(svg), "");
  EXPECT_NE(svg.find("Queue &lt;length&gt; &amp; wait"), std::string::npos);
  EXPECT_NE(svg.find(">fifo<"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b&amp;c<"), std::string::npos);
  EXPECT_NE(svg.find(">&quot;gavel&quot; &apos;las&apos;<"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_EQ(count_of(svg, "<polyline"), 2u);            // the empty series gets no line ...
  EXPECT_EQ(texts_of_class(svg, "legend").size(), 3u);  // ... but a legend entry
  EXPECT_EQ(texts_of_class(svg, "x-label"), std::vector<std::string>{"time (h)"});
  EXPECT_EQ(texts_of_class(svg, "y-label"), std::vector<std::string>{"jobs"});
}

TEST(RenderLineChart, GivesEachSeriesItsOwnColour) {
  std::vector<Series> series;
  for (int i = 0; i < 7; ++i) series.push_back(ramp("s" + std::to_string(i), 0, i + 1.0, 3));
  std::string svg = render_line_chart(series, {});
  std::regex re("<g class=\"series\" fill=\"none\" stroke=\"(#[0-9A-F]{6})\"");
  std::set<std::string> colours;
  for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end; ++it) {
    colours.insert((*it)[1]);
  }
  EXPECT_EQ(colours.size(), 7u);
}

TEST(RenderLineChart, LinearTicksAreNiceOneTwoFiveValues) {
  std::string svg = render_line_chart({ramp("r", 0, 97, 50)}, {});
  std::vector<std::string> expected = {"0", "20", "40", "60", "80", "100"};
  EXPECT_EQ(texts_of_class(svg, "x-tick"), expected);
  EXPECT_EQ(texts_of_class(svg, "y-tick"), expected);

  Series fractions{.name = "f", .x = {0, 1}, .y = {0.03, 0.96}};
  EXPECT_EQ(texts_of_class(render_line_chart({fractions}, {}), "y-tick"),
            (std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1"}));

  Series large{.name = "l", .x = {0, 1}, .y = {0, 1.13e6}};
  EXPECT_EQ(texts_of_class(render_line_chart({large}, {}), "y-tick"),
            (std::vector<std::string>{"0", "200k", "400k", "600k", "800k", "1M", "1.2M"}));
}

TEST(RenderLineChart, LogAxisLabelsDecadesAndSkipsNonPositiveX) {
  Series s{.name = "jct", .x = {-5, 0, 3, 40, 900, 250000}, .y = {1, 2, 3, 4, 5, 6}};
  std::string svg = render_line_chart({s}, {.log_x = true});
  EXPECT_EQ(texts_of_class(svg, "x-tick"),
            (std::vector<std::string>{"10", "100", "1k", "10k", "100k"}));
  ASSERT_EQ(polylines(svg).size(), 1u);
  EXPECT_EQ(polylines(svg)[0].size(), 4u);
  EXPECT_DOUBLE_EQ(polylines(svg)[0].front().x, plot_area(svg).left);  // starts at x = 3
}

TEST(RenderLineChart, ClipsLinesToThePlotBoxWhenYIsFixed) {
  Series s{.name = "spiky", .x = {0, 1, 2, 3, 4, 5, 6}, .y = {2, 100, 3, -50, 4, 5, 1e299}};
  std::string svg = render_line_chart({s}, {.y_min = 0.0, .y_max = 10.0});
  EXPECT_EQ(check_well_formed(svg), "");
  Box box = plot_area(svg);
  auto lines = polylines(svg);
  EXPECT_GE(lines.size(), 3u);  // leaves and re-enters the box twice
  for (const auto& line : lines) {
    for (Pt p : line) {
      EXPECT_GE(p.x, box.left);
      EXPECT_LE(p.x, box.right);
      EXPECT_GE(p.y, box.top);
      EXPECT_LE(p.y, box.bottom);
    }
  }
  EXPECT_EQ(texts_of_class(svg, "y-tick").front(), "0");
  EXPECT_EQ(texts_of_class(svg, "y-tick").back(), "10");
}

TEST(RenderLineChart, SkipsNonFiniteValues) {
  double nan = std::nan(""), inf = INFINITY;
  Series s{.name = "holes", .x = {0, 1, nan, 3, 4, inf}, .y = {1, nan, 2, 3, -inf, 1}};
  std::string svg = render_line_chart({s}, {});
  EXPECT_EQ(check_well_formed(svg), "");
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  ASSERT_EQ(polylines(svg).size(), 1u);
  EXPECT_EQ(polylines(svg)[0].size(), 2u);  // only (0,1) and (3,3) are usable
}

TEST(RenderLineChart, DrawsStepSeriesAsHorizontalThenVerticalMoves) {
  Series s{.name = "queue", .x = {0, 1, 2}, .y = {0, 4, 2}};
  auto lines = polylines(render_line_chart({s}, {.step = true}));
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].size(), 5u);
  for (size_t i = 1; i < 5; i += 2) {
    EXPECT_EQ(lines[0][i].y, lines[0][i - 1].y);  // holds the value ...
    EXPECT_EQ(lines[0][i + 1].x, lines[0][i].x);  // ... then jumps
  }
}

TEST(RenderLineChart, SurvivesDegenerateAndExtremeRanges) {
  const std::vector<Series> cases = {{.name = "flat", .x = {1, 1, 1}, .y = {5, 5, 5}},
                                     {.name = "tiny span", .x = {0, 1}, .y = {1e15, 1e15 + 0.5}},
                                     {.name = "huge", .x = {-1e308, 1e308}, .y = {-1e300, 1e300}},
                                     {.name = "denormal", .x = {4e-320, 1e-300}, .y = {0, 1}}};
  for (const Series& s : cases) {
    for (bool log_x : {false, true}) {
      std::string svg = render_line_chart({s}, {.log_x = log_x, .y_min = 3.0, .y_max = 3.0});
      EXPECT_EQ(check_well_formed(svg), "") << s.name;
      EXPECT_EQ(svg.find("nan"), std::string::npos) << s.name;
      EXPECT_EQ(svg.find("inf"), std::string::npos) << s.name;
      EXPECT_LE(texts_of_class(svg, "x-tick").size(), 101u) << s.name;
      EXPECT_EQ(check_well_formed(render_line_chart({s}, {.log_x = log_x})), "") << s.name;
    }
  }
}

TEST(RenderLineChart, IsDeterministic) {
  std::vector<Series> series = {ramp("a", 0, 5, 1000), cdf_series("b", {3, 1, 2})};
  ChartOptions options{.title = "t", .x_label = "x", .y_label = "y", .step = true};
  EXPECT_EQ(render_line_chart(series, options), render_line_chart(series, options));
}

TEST(RenderLineChart, DownsamplesLargeSeriesButKeepsExtremes) {
  Series s{.name = "util", .x = {}, .y = {}};
  for (int i = 0; i < 100000; ++i) {
    s.x.push_back(i / 3600.0);
    s.y.push_back(std::sin(i / 500.0));
  }
  s.y[54321] = 1000;  // one-sample spike and dip must survive the reduction
  s.y[77777] = -1000;
  std::string svg = render_line_chart({s}, {.title = "big"});
  EXPECT_LT(svg.size(), 100u * 1024);
  EXPECT_EQ(check_well_formed(svg), "");
  Box box = plot_area(svg);
  auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_LT(lines[0].size(), 5000u);
  double top = box.bottom, bottom = box.top;
  for (Pt p : lines[0]) top = std::min(top, p.y), bottom = std::max(bottom, p.y);
  EXPECT_DOUBLE_EQ(top, box.top);  // +1000 is the axis maximum
  EXPECT_DOUBLE_EQ(bottom, box.bottom);
}

TEST(RenderLineChart, RendersAxesWithoutAnySeries) {
  std::string svg = render_line_chart({}, {.title = "nothing yet"});
  EXPECT_EQ(check_well_formed(svg), "");
  EXPECT_EQ(count_of(svg, "<polyline"), 0u);
  EXPECT_FALSE(texts_of_class(svg, "x-tick").empty());
}

TEST(CdfSeries, SortsValuesAndRanksThemUpToOne) {
  Series s = cdf_series("jct", {3, 1, std::nan(""), 2, 2});
  EXPECT_EQ(s.name, "jct");
  EXPECT_EQ(s.x, (std::vector<double>{1, 2, 2, 3}));
  EXPECT_EQ(s.y, (std::vector<double>{0.25, 0.5, 0.75, 1}));
}

TEST(WriteFile, ReplacesTheFileWholeAndLeavesNoTempFiles) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ty_svg_plot_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "chart.svg").string();
  ASSERT_TRUE(write_file(path, "old").is_ok());
  ASSERT_TRUE(write_file(path, "<svg/>\n").is_ok());
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "<svg/>\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

TEST(WriteFile, NamesThePathWhenTheDirectoryIsMissing) {
  const std::string path = "/nonexistent_ty_dir/sub/chart.svg";
  util::Status status = write_file(path, "x");
  EXPECT_EQ(status.code(), util::StatusCode::NotFound);
  EXPECT_NE(status.message().find(path), std::string::npos);
  EXPECT_NE(status.message().find("does not exist"), std::string::npos);
}

}  // namespace
}  // namespace trainyard::sim
