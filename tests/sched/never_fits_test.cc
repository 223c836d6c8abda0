// never_fits() decided per group of alike nodes (NodeGroups) must give the node-by-node answer,
// filter included, for every job of random snapshots: with and without node selectors, MIG,
// fractional, CPU-only and gang requests.
#include <gtest/gtest.h>

#include "sched/placement.h"
#include "tests/sched/random_snapshot.h"

namespace trainyard::sched {
namespace {

TEST(NeverFits, GroupedAnswerEqualsNodeByNodeAnswerOnRandomSnapshots) {
  int never = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const Snapshot snap = testing::RandomSnapshot(seed).build();
    NodeSelectorIndex selectors(snap);
    for (const SnapshotJob& job : snap.jobs) {
      const PlaceOptions opts{.selector_matches = selectors.matching(job.node_selector)};
      const NodeGroups groups(snap, opts.selector_matches);
      uint8_t by_node = 0;
      uint8_t by_group = 0;
      const bool expected = never_fits(job, snap, &by_node, opts);
      ASSERT_EQ(never_fits(job, snap, &by_group, opts, &groups), expected)
          << "seed " << seed << " job " << job.id.value();
      if (!expected) continue;
      ++never;
      EXPECT_EQ(by_group, by_node) << "seed " << seed << " job " << job.id.value();
    }
  }
  EXPECT_GT(never, 0);  // the snapshots do hold jobs that can never run
}

TEST(NeverFits, GroupsBuiltForAnotherSelectorAreNotUsed) {
  const Snapshot snap = testing::RandomSnapshot(7).build();
  NodeSelectorIndex selectors(snap);
  const NodeGroups no_selector(snap, nullptr);
  for (const SnapshotJob& job : snap.jobs) {
    if (job.node_selector.empty()) continue;
    const PlaceOptions opts{.selector_matches = selectors.matching(job.node_selector)};
    uint8_t by_node = 0;
    uint8_t with_wrong_groups = 0;
    const bool expected = never_fits(job, snap, &by_node, opts);
    EXPECT_EQ(never_fits(job, snap, &with_wrong_groups, opts, &no_selector), expected);
    if (expected) {
      EXPECT_EQ(with_wrong_groups, by_node);
    }
  }
}

}  // namespace
}  // namespace trainyard::sched
