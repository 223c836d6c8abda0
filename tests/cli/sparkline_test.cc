#include "cli/sparkline.h"

#include <gtest/gtest.h>

#include "cli/progress_format.h"
#include "cli/telemetry_rows.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

TEST(Sparkline, ScalesValuesOntoEightBlocksBetweenLoAndHi) {
  const Series s = {0.0, 100.0 / 7, 200.0 / 7, 300.0 / 7, 400.0 / 7, 500.0 / 7, 600.0 / 7, 100.0};
  EXPECT_EQ(sparkline(s, {.lo = 0.0, .hi = 100.0}), "▁▂▃▄▅▆▇█");
  EXPECT_EQ(sparkline(s, {.ascii = true, .lo = 0.0, .hi = 100.0}), "_.-:=+*#");
}

TEST(Sparkline, MissingPointsAreSpacesAndOutOfRangeIsClamped) {
  const Series s = {-5.0, std::nullopt, 250.0};
  EXPECT_EQ(sparkline(s, {.ascii = true, .lo = 0.0, .hi = 100.0}), "_ #");
}

TEST(Sparkline, WithoutBoundsUsesTheSeriesOwnRangeAndAFlatSeriesIsLow) {
  EXPECT_EQ(sparkline(Series{10.0, 20.0}, {.ascii = true}), "_#");
  EXPECT_EQ(sparkline(Series{42.0, 42.0, 42.0}, {.ascii = true}), "___");
  EXPECT_EQ(sparkline(Series{}, {}), "");
}

TEST(Sparkline, LongSeriesAreAveragedIntoTheWidth) {
  Series s;
  for (int i = 0; i < 120; ++i) s.push_back(i < 60 ? 0.0 : 100.0);
  const std::string line = sparkline(s, {.ascii = true, .lo = 0.0, .hi = 100.0, .width = 10});
  EXPECT_EQ(line, "_____#####");
  const Series d = downsample(Series{1.0, 3.0, std::nullopt, std::nullopt, 5.0}, 2);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_DOUBLE_EQ(*d[0], 2.0);  // {1, 3}
  EXPECT_DOUBLE_EQ(*d[1], 5.0);  // {-, -, 5}: missing points do not count
}

TEST(Sparkline, StatsSkipMissingPoints) {
  const SeriesStats st = series_stats(Series{4.0, std::nullopt, 8.0, 0.0});
  EXPECT_DOUBLE_EQ(*st.min, 0.0);
  EXPECT_DOUBLE_EQ(*st.max, 8.0);
  EXPECT_DOUBLE_EQ(*st.mean, 4.0);
  EXPECT_FALSE(series_stats(Series{std::nullopt}).mean.has_value());
}

TEST(Sparkline, Utf8LocaleFollowsPosixPrecedence) {
  EXPECT_TRUE(utf8_locale(nullptr, nullptr, "en_US.UTF-8"));
  EXPECT_TRUE(utf8_locale("C.utf8", nullptr, nullptr));
  EXPECT_FALSE(utf8_locale("C", nullptr, "en_US.UTF-8"));  // LC_ALL wins
  EXPECT_FALSE(utf8_locale("", "POSIX", "en_US.UTF-8"));   // empty is unset
  EXPECT_FALSE(utf8_locale(nullptr, nullptr, nullptr));
}

TEST(ProgressFormat, ShowsStepOfTotalRateAndEta) {
  const model::JobProgressView progress{.step = 120,
                                        .total_steps = 1000,
                                        .fraction = 0.12,
                                        .steps_per_second = 2.0,
                                        .samples_per_second = 1234.0,
                                        .eta_seconds = 440};
  EXPECT_EQ(progress_cells(progress),
            (std::vector<std::string>{"120/1000 (12%)", "1.2k samples/s", "7m20s"}));
  const model::JobProgressView steps_only{.step = 7, .steps_per_second = 0.5};
  EXPECT_EQ(progress_cells(steps_only), (std::vector<std::string>{"7", "0.5 steps/s", "-"}));
  EXPECT_EQ(progress_cells(std::nullopt), (std::vector<std::string>{"-", "-", "-"}));
}

TEST(ProgressFormat, ShortDurations) {
  EXPECT_EQ(short_duration(42), "42s");
  EXPECT_EQ(short_duration(3727), "1h02m");
  EXPECT_EQ(short_duration(90000), "1d01h");
  EXPECT_EQ(short_duration(-1), "-");
}

TEST(TelemetryRows, NamesDevicesFromPlacementsAndWritesRfc4180Csv) {
  model::JobDetailView job;
  job.job.placement = {{.node = "n,1", .gpu = 1, .device = "GPU-b"}};
  job.attempts = {{.attempt = 1, .placement = {{.node = "n0", .gpu = 0, .device = "GPU-a"}}}};
  const model::JobTelemetryView t{.minutes = {{.device = "GPU-b",
                                               .minute = "2026-01-01T00:01:00.000Z",
                                               .samples = 60,
                                               .gpu_util_avg = 50.0,
                                               .memory_used_avg_bytes = 1048576.0 * 100},
                                              {.device = "GPU-a",
                                               .minute = "2026-01-01T00:00:00.000Z",
                                               .samples = 3,
                                               .partial = true}}};
  const auto rows = telemetry_rows(t, job);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].device, "GPU-a");  // ordered by time
  EXPECT_EQ(rows[0].node, "n0");
  EXPECT_EQ(rows[0].gpu, 0);
  EXPECT_TRUE(rows[0].partial);
  EXPECT_EQ(rows[1].gpu, 1);
  EXPECT_DOUBLE_EQ(*rows[1].memory_used_mib, 100.0);
  const std::string csv = rows_csv(rows);
  EXPECT_EQ(csv.substr(0, csv.find("\r\n")).rfind("time,node,gpu,device,samples,partial,", 0), 0u);
  EXPECT_NE(csv.find("\r\n2026-01-01T00:01:00.000Z,\"n,1\",1,GPU-b,60,false,50.0,"),
            std::string::npos);
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("a\nb"), "\"a\nb\"");
  EXPECT_EQ(csv_field("plain"), "plain");
}

}  // namespace
}  // namespace trainyard::cli
