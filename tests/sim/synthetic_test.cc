#include "sim/synthetic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "tests/sim/trace_test_util.h"

namespace trainyard::sim {
namespace {

using testing::contains;

TEST(SyntheticWorkload, SameSeedGivesTheIdenticalWorkload) {
  auto a = generate_synthetic({.seed = 42, .jobs = 500});
  auto b = generate_synthetic({.seed = 42, .jobs = 500});
  auto c = generate_synthetic({.seed = 43, .jobs = 500});
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  EXPECT_EQ(format_csv_trace(*a), format_csv_trace(*b));
  EXPECT_NE(format_csv_trace(*a), format_csv_trace(*c));
  EXPECT_EQ(a->jobs.size(), 500u);
  EXPECT_EQ(a->jobs.front().id, util::JobId(1));
  EXPECT_EQ(a->jobs.front().submit, util::kEpoch);
}

TEST(SyntheticWorkload, FollowsTheDefaultMixAndRateForALargeSample) {
  constexpr int64_t kJobs = 40000;
  auto w = generate_synthetic({.seed = 7, .jobs = kJobs, .jobs_per_hour = 120});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  std::map<int, int> by_gpus;
  int short_jobs = 0;
  for (const TraceJob& j : w->jobs) {
    ++by_gpus[j.spec.total_gpus()];
    const double s = util::to_seconds(j.duration);
    EXPECT_GE(s, 60 * std::pow(10, 1.5) - 1e-3);
    EXPECT_LE(s, 60 * std::pow(10, 4.0) + 1e-3);
    short_jobs += s < 60 * 1000;
  }
  // Binomial standard deviations at n = 40,000 are below 0.0025; allow about 4 of them.
  auto share = [&](int n) { return static_cast<double>(n) / kJobs; };
  EXPECT_NEAR(share(by_gpus[1]), 0.70, 0.01);
  EXPECT_NEAR(share(by_gpus[2]), 0.10, 0.01);
  EXPECT_NEAR(share(by_gpus[4]), 0.15, 0.01);
  EXPECT_NEAR(share(by_gpus[8]), 0.05, 0.01);
  EXPECT_EQ(by_gpus.size(), 4u);
  EXPECT_NEAR(share(short_jobs), 0.80, 0.01);
  // Mean gap of a Poisson process at 120/h is 30 s; its standard error here is 0.15 s.
  const double span_s = util::to_seconds(w->jobs.back().submit - w->jobs.front().submit);
  EXPECT_NEAR(span_s / (kJobs - 1), 30.0, 0.75);
}

TEST(SyntheticWorkload, TeamSizesAreSkewed) {
  auto w = generate_synthetic({.seed = 3, .jobs = 20000, .teams = 4, .team_skew = 1.0});
  ASSERT_TRUE(w.is_ok());
  std::map<std::string, int> by_team;
  for (const TraceJob& j : w->jobs) ++by_team[j.spec.team];
  ASSERT_EQ(by_team.size(), 4u);
  // Zipf weights 1, 1/2, 1/3, 1/4: team-1 holds 12/25 = 48% of the jobs.
  EXPECT_NEAR(by_team["team-1"] / 20000.0, 0.48, 0.015);
  EXPECT_GT(by_team["team-1"], by_team["team-2"]);
  EXPECT_GT(by_team["team-2"], by_team["team-3"]);
  EXPECT_GT(by_team["team-3"], by_team["team-4"]);
}

TEST(SyntheticWorkload, SplitsLargeJobsIntoGangs) {
  auto w = generate_synthetic({.jobs = 50, .gpu_mix = {{32, 1.0}}, .gpus_per_node = 8});
  ASSERT_TRUE(w.is_ok());
  for (const TraceJob& j : w->jobs) {
    EXPECT_EQ(j.spec.workers, 4);
    EXPECT_EQ(j.spec.worker.gpus, 8);
  }
}

TEST(SyntheticWorkload, RefusesBadOptions) {
  EXPECT_TRUE(
      contains(generate_synthetic({.jobs_per_hour = 0}).status().message(), "jobs_per_hour"));
  EXPECT_TRUE(contains(generate_synthetic({.jobs = -1}).status().message(), "jobs"));
  EXPECT_TRUE(contains(generate_synthetic({.gpu_mix = {}}).status().message(), "gpu_mix"));
  EXPECT_TRUE(contains(generate_synthetic({.gpu_mix = {{0, 1.0}}}).status().message(), "gpu_mix"));
  EXPECT_TRUE(contains(generate_synthetic({.teams = 0}).status().message(), "teams"));
  EXPECT_TRUE(contains(generate_synthetic({.durations = {.long_exp_hi = 12}}).status().message(),
                       "durations"));
}

}  // namespace
}  // namespace trainyard::sim
