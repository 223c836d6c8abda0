// Zone back-off: a reclaim or a refused request blocks its zone only; the pool is out only
// while every zone is blocked, until the first of them reopens.
#include "drive/zone_backoff.h"

#include <gtest/gtest.h>

#include "sched/snapshot.h"

namespace trainyard::drive {
namespace {

sched::SnapshotPool three_zones() {
  sched::SnapshotPool p;
  p.kind = model::PoolKind::Spot;
  p.zones = {{.name = "a"}, {.name = "b"}, {.name = "c"}};
  return p;
}

TEST(ZoneBackoff, ARefusedRequestBlocksItsZoneAndThePoolOnlyWhenEveryZoneRefused) {
  sched::SnapshotPool p = three_zones();
  const util::Time t0 = util::from_seconds(1000);
  const util::Duration retry = util::seconds(300);
  refuse_zone(p, 0, t0, retry);
  EXPECT_EQ(p.zones[0].blocked_until, t0 + retry);
  EXPECT_EQ(p.zones[1].blocked_until, util::Time{});
  EXPECT_EQ(p.unavailable_until, util::Time{});  // the other zones may still sell
  refuse_zone(p, 1, t0 + util::seconds(10), retry);
  EXPECT_EQ(p.unavailable_until, util::Time{});
  refuse_zone(p, 2, t0 + util::seconds(20), retry);
  EXPECT_EQ(p.unavailable_until, t0 + retry);  // when the first refused zone reopens
}

TEST(ZoneBackoff, APoolWithoutZonesIsOutForTheRetryAndARefusalNeverShortensABlock) {
  sched::SnapshotPool none;
  refuse_zone(none, 0, util::from_seconds(50), util::seconds(300));
  EXPECT_EQ(none.unavailable_until, util::from_seconds(350));

  sched::SnapshotPool p = three_zones();
  block_zone(p, 1, util::from_seconds(600));  // a reclaim there
  refuse_zone(p, 1, util::from_seconds(100), util::seconds(60));
  EXPECT_EQ(p.zones[1].blocked_until, util::from_seconds(600));
  block_zone(p, 7, util::from_seconds(900));  // no such zone: nothing to block
  EXPECT_EQ(p.zones[2].blocked_until, util::Time{});
}

}  // namespace
}  // namespace trainyard::drive
