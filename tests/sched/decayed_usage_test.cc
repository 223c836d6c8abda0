#include "sched/decayed_usage.h"

#include <gtest/gtest.h>

#include <vector>

namespace trainyard::sched {
namespace {

util::Time at(double s) {
  return util::from_seconds(s);
}

TEST(DecayedUsage, ShareIsUsageOverCapacityWhileUsageIsSteady) {
  DecayedUsage u(util::seconds(3600));
  const std::vector<double> gpus = {6, 2};
  u.advance(at(0), gpus, 10);
  EXPECT_EQ(u.share(0), 0.0);  // no time has passed yet
  u.advance(at(600), gpus, 10);
  EXPECT_NEAR(u.share(0), 0.6, 1e-9);
  EXPECT_NEAR(u.share(1), 0.2, 1e-9);
  EXPECT_EQ(u.share(2), 0.0);  // never seen
}

TEST(DecayedUsage, PastUsageHalvesEveryHalfLifeAgainstASteadyCluster) {
  // Team 0 held the whole cluster for a long time (share -> 1), then nothing: its decayed usage
  // halves each half-life while the cluster's decayed capacity stays at its steady value.
  DecayedUsage u(util::seconds(3600));
  u.advance(at(0), std::vector<double>{10}, 10);
  u.advance(at(3600 * 40), std::vector<double>{10}, 10);
  EXPECT_NEAR(u.share(0), 1.0, 1e-9);
  u.advance(at(3600 * 41), std::vector<double>{0}, 10);
  EXPECT_NEAR(u.share(0), 0.5, 1e-6);
  u.advance(at(3600 * 43), std::vector<double>{0}, 10);
  EXPECT_NEAR(u.share(0), 0.125, 1e-6);
}

TEST(DecayedUsage, TeamsAddedLaterStartFromNothing) {
  DecayedUsage u(util::seconds(60));
  u.advance(at(0), std::vector<double>{4}, 4);
  u.advance(at(60), std::vector<double>{4}, 4);
  u.advance(at(120), std::vector<double>{0, 4}, 4);
  // Each held the cluster for one half-life; team 0's use is a half-life older, so it counts
  // half as much. Together they held all of it: the shares add up to 1.
  EXPECT_NEAR(u.share(0), u.share(1) / 2, 1e-9);
  EXPECT_NEAR(u.share(0) + u.share(1), 1.0, 1e-9);
}

}  // namespace
}  // namespace trainyard::sched
