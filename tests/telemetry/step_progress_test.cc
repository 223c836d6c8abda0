#include "telemetry/step_progress.h"

#include <gtest/gtest.h>

#include <string>

namespace trainyard::telemetry {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

StepMetrics line(int64_t ms, int64_t step, std::optional<int64_t> samples = std::nullopt,
                 std::optional<int64_t> total = std::nullopt) {
  StepMetrics m;
  m.time = util::from_millis(kT0 + ms);
  m.step = step;
  m.samples = samples;
  m.total_steps = total;
  return m;
}

TEST(StepProgress, RateIsStepsOverTimeAndEtaIsStepsLeftOverRate) {
  // 2 steps per second for 10 s, 64 samples per step, 1000 steps in all.
  std::vector<StepMetrics> lines;
  for (int i = 0; i <= 20; ++i) lines.push_back(line(i * 500, 100 + i, 64, 1000));
  const auto p = step_progress(lines);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 120);
  EXPECT_EQ(p->reported, util::from_millis(kT0 + 10'000));
  EXPECT_EQ(p->total_steps, 1000);
  ASSERT_TRUE(p->steps_per_s.has_value());
  EXPECT_DOUBLE_EQ(*p->steps_per_s, 2.0);
  EXPECT_DOUBLE_EQ(*p->samples_per_s, 128.0);
  EXPECT_DOUBLE_EQ(*p->eta_s, (1000 - 120) / 2.0);
  EXPECT_DOUBLE_EQ(*p->fraction(), 0.12);
}

TEST(StepProgress, NoTotalMeansNoEtaAndNoFraction) {
  std::vector<StepMetrics> lines = {line(0, 1), line(1000, 11)};
  const auto p = step_progress(lines);
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(*p->steps_per_s, 10.0);
  EXPECT_FALSE(p->eta_s.has_value());
  EXPECT_FALSE(p->fraction().has_value());
  EXPECT_FALSE(p->samples_per_s.has_value());
}

TEST(StepProgress, TotalGivenOnceEarlierStillCounts) {
  std::vector<StepMetrics> lines = {line(0, 0, std::nullopt, 50), line(1000, 10), line(2000, 20)};
  const auto p = step_progress(lines);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->total_steps, 50);
  EXPECT_DOUBLE_EQ(*p->eta_s, 3.0);
}

TEST(StepProgress, DoneJobHasZeroEtaAndFractionCappedAtOne) {
  std::vector<StepMetrics> lines = {line(0, 90, std::nullopt, 100), line(1000, 120)};
  const auto p = step_progress(lines);
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(*p->eta_s, 0.0);
  EXPECT_DOUBLE_EQ(*p->fraction(), 1.0);
}

TEST(StepProgress, RateFollowsTheRecentWindowOnly) {
  // Slow at first (1 step/s), fast for the last 5 minutes (10 steps/s).
  std::vector<StepMetrics> lines;
  int64_t step = 0;
  for (int s = 0; s < 600; s += 10) lines.push_back(line(s * 1000, step += 10));
  for (int s = 600; s <= 1200; s += 10) lines.push_back(line(s * 1000, step += 100));
  const auto p = step_progress(lines, {.window = util::seconds(300)});
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(*p->steps_per_s, 10.0, 1e-9);
}

TEST(StepProgress, StepGoingBackStartsTheWindowAfresh) {
  // A restart from an older checkpoint appended to the same file: 200 -> 150.
  std::vector<StepMetrics> lines = {line(0, 100), line(1000, 200), line(2000, 150),
                                    line(6000, 170)};
  const auto p = step_progress(lines);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 170);
  EXPECT_DOUBLE_EQ(*p->steps_per_s, 5.0);
}

TEST(StepProgress, OneLineUsesTheJobsStepTime) {
  StepMetrics m = line(0, 7, 32);
  m.step_time_s = 0.25;
  const auto p = step_progress(std::span<const StepMetrics>(&m, 1));
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(*p->steps_per_s, 4.0);
  EXPECT_DOUBLE_EQ(*p->samples_per_s, 128.0);
}

TEST(StepProgress, LinesWithoutStepsGiveNothing) {
  StepMetrics m;
  m.time = util::from_millis(kT0);
  m.loss = 0.5;
  EXPECT_FALSE(step_progress(std::span<const StepMetrics>(&m, 1)).has_value());
  EXPECT_FALSE(step_progress({}).has_value());
}

TEST(MetricsTail, DropsTheCutFirstLineAndTheUnfinishedLastOne) {
  const std::string text =
      "ep\":3,\"time\":1}\n"
      "{\"time\":1700000000.5,\"step\":4,\"total_steps\":9}\n"
      "not json\n"
      "{\"time\":1700000001.5,\"step\":5}\n"
      "{\"time\":1700000002";
  const auto cut = parse_metrics_tail(text, false);
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_EQ(cut[0].step, 4);
  EXPECT_EQ(cut[0].total_steps, 9);
  EXPECT_EQ(cut[1].time, util::from_millis(1'700'000'001'500));
  const auto whole = parse_metrics_tail("{\"time\":1,\"step\":1}\n", true);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].step, 1);
}

}  // namespace
}  // namespace trainyard::telemetry
