// GET /api/v1/jobs/{id}/metrics: rank 0's step metrics of every attempt as chart columns,
// averaged down to at most the points asked for, with the job's team rules.
#include <fstream>

#include <gtest/gtest.h>

#include "plane_fixture.h"
#include "server/job_metrics.h"

namespace trainyard::server {
namespace {

telemetry::StepMetrics line(int64_t ms, int64_t step, double loss, double wait, double step_time) {
  return {.time = util::from_millis(ms),
          .step = step,
          .samples = 32,
          .loss = loss,
          .data_wait_s = wait,
          .step_time_s = step_time};
}

TEST(MetricsSeries, KeepsEveryLineWhenTheyFit) {
  std::vector<std::pair<int, telemetry::StepMetrics>> lines = {{1, line(1000, 1, 2.0, 0.05, 0.1)},
                                                               {1, line(2000, 2, 1.0, 0.0, 0.2)}};
  lines.push_back({1, {.time = util::from_millis(3000), .step = 3}});  // a line with only a step
  const auto s = metrics_series(lines, 500);
  EXPECT_EQ(s["lines"], 3);
  EXPECT_EQ(s["points"], 3);
  EXPECT_EQ(s["time"], nlohmann::json({1.0, 2.0, 3.0}));
  EXPECT_EQ(s["step"], nlohmann::json({1, 2, 3}));
  EXPECT_EQ(s["loss"][0], 2.0);
  EXPECT_TRUE(s["loss"][2].is_null());
  EXPECT_DOUBLE_EQ(s["dataWaitPercent"][0].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(s["samplesPerSecond"][0].get<double>(), 320.0);
  EXPECT_DOUBLE_EQ(s["samplesPerSecond"][1].get<double>(), 160.0);
  EXPECT_TRUE(s["samplesPerSecond"][2].is_null());
}

TEST(MetricsSeries, AveragesDownToTheLimitWithoutMixingAttempts) {
  std::vector<std::pair<int, telemetry::StepMetrics>> lines;
  for (int i = 0; i < 1000; ++i)
    lines.push_back({i < 500 ? 1 : 2, line(i * 1000, i, i % 2 == 0 ? 1.0 : 3.0, 0.01, 0.1)});
  const auto s = metrics_series(lines, 100);
  EXPECT_EQ(s["lines"], 1000);
  EXPECT_EQ(s["points"].get<int>(), 100);  // 10 lines a point
  ASSERT_EQ(s["time"].size(), s["points"].get<size_t>());
  EXPECT_DOUBLE_EQ(s["loss"][0].get<double>(), 2.0);  // the mean of 1 and 3
  EXPECT_EQ(s["step"].back(), 999);                   // the last line's step
  EXPECT_EQ(s["time"].back(), 999.0);
  for (size_t i = 1; i < s["attempt"].size(); ++i) {
    EXPECT_LE(s["attempt"][i - 1].get<int>(), s["attempt"][i].get<int>());
    EXPECT_LT(s["time"][i - 1].get<double>(), s["time"][i].get<double>());
  }
  EXPECT_EQ(s["attempt"].front(), 1);
  EXPECT_EQ(s["attempt"].back(), 2);
  // Points never mix attempts, even when fewer are asked for.
  EXPECT_EQ(metrics_series(lines, 1)["points"], 2);
  EXPECT_EQ(metrics_series({}, 500)["points"], 0);
}

class JobMetricsPlane : public PlaneTest {
 protected:
  void write(int64_t id, int attempt, const std::string& text) {
    const auto dir =
        dir_ / "jobs" / std::to_string(id) / ("attempt-" + std::to_string(attempt)) / "rank-0";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "metrics.jsonl") << text;
  }
};

TEST_F(JobMetricsPlane, ReadsRankZerosMetricsFileDownsampled) {
  const int64_t id = submit(job_yaml("train"));
  std::string text;
  for (int i = 1; i <= 2000; ++i)
    text += "{\"time\": " + std::to_string(1748779200 + i) + ".5, \"step\": " + std::to_string(i) +
            ", \"samples\": 64, \"loss\": 0.5, \"data_wait_s\": 0.05, \"step_time_s\": 0.1}\n";
  text += "{\"time\": 17487";  // a line caught mid-append is skipped
  write(id, 1, text);
  auto r = plane_->job_metrics(util::JobId(id), 500, admin_);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)["job"], id);
  EXPECT_EQ((*r)["lines"], 2000);
  EXPECT_EQ((*r)["points"], 500);
  EXPECT_EQ((*r)["step"].back(), 2000);
  EXPECT_DOUBLE_EQ((*r)["time"].back().get<double>(), 1748781200.5);
  EXPECT_DOUBLE_EQ((*r)["loss"][7].get<double>(), 0.5);
  EXPECT_NEAR((*r)["dataWaitPercent"][7].get<double>(), 50.0, 1e-9);
  EXPECT_NEAR((*r)["samplesPerSecond"][7].get<double>(), 640.0, 1e-9);
  EXPECT_EQ((*r)["notes"], nlohmann::json::array());
}

TEST_F(JobMetricsPlane, NoFileIsAnEmptySeriesAndABadLineANote) {
  const int64_t id = submit(job_yaml("quiet"));
  auto r = plane_->job_metrics(util::JobId(id), 500, admin_);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)["lines"], 0);
  EXPECT_EQ((*r)["time"], nlohmann::json::array());
  write(id, 1, "{\"time\": 1, \"step\": \"x\"}\n{\"time\": 2}\n");
  r = plane_->job_metrics(util::JobId(id), 500, admin_);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)["lines"], 0);
  ASSERT_EQ((*r)["notes"].size(), 1u);
  EXPECT_NE((*r)["notes"][0].get<std::string>().find("attempt 1"), std::string::npos);
}

TEST_F(JobMetricsPlane, AnotherTeamsTokenIsRefused) {
  const int64_t id = submit(job_yaml("train"));
  Principal other{.team = "nlp", .name = "n"};
  auto r = plane_->job_metrics(util::JobId(id), 500, other);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), util::StatusCode::PermissionDenied);
  EXPECT_EQ(plane_->job_metrics(util::JobId(9999), 500, admin_).status().code(),
            util::StatusCode::NotFound);
}

}  // namespace
}  // namespace trainyard::server
