// The job list's sorts, keyset paging both ways and the node filter, straight on the store.
#include <gtest/gtest.h>

#include "store/store.h"
#include "tests/store/store_test_util.h"

namespace trainyard::store {
namespace {

using model::JobState;

std::vector<int64_t> ids_of(const std::vector<JobRecord>& jobs) {
  std::vector<int64_t> ids;
  for (const JobRecord& job : jobs) ids.push_back(job.id.value());
  return ids;
}

// Jobs 1..6: names c, a, b, a, c, b; teams x, y alternating; 1-3 on node "n1", 4 on "n10".
StorePtr six_jobs(TempDir& dir) {
  StorePtr store = open_or_fail(dir.db());
  const char* names[] = {"c", "a", "b", "a", "c", "b"};
  const JobState states[] = {JobState::Running, JobState::Pending,   JobState::Succeeded,
                             JobState::Failed,  JobState::Cancelled, JobState::Pending};
  for (int i = 0; i < 6; ++i) {
    JobRecord job = make_job(names[i], i % 2 == 0 ? "x" : "y", states[i]);
    if (i < 3) job.placement_json = R"([{"gpu":0,"milli":1000,"node":"n1","worker":0}])";
    if (i == 3) job.placement_json = R"([{"gpu":1,"milli":1000,"node":"n10","worker":0}])";
    EXPECT_TRUE(store->insert_job(job).is_ok());
  }
  return store;
}

TEST(StoreJobSort, SortsByEachKeyWithIdBreakingTies) {
  TempDir dir;
  StorePtr store = six_jobs(dir);
  EXPECT_EQ(ids_of(*store->list_jobs({.sort = JobSort::Id, .ascending = true})),
            (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ids_of(*store->list_jobs({.sort = JobSort::Name, .ascending = true})),
            (std::vector<int64_t>{2, 4, 3, 6, 1, 5}));
  EXPECT_EQ(ids_of(*store->list_jobs({.sort = JobSort::Name})),
            (std::vector<int64_t>{5, 1, 6, 3, 4, 2}));
  EXPECT_EQ(ids_of(*store->list_jobs({.sort = JobSort::Team, .ascending = true})),
            (std::vector<int64_t>{1, 3, 5, 2, 4, 6}));
  // States as their names order: cancelled, failed, pending, running, succeeded.
  EXPECT_EQ(ids_of(*store->list_jobs({.sort = JobSort::State, .ascending = true})),
            (std::vector<int64_t>{5, 4, 2, 6, 1, 3}));
  EXPECT_EQ(ids_of(*store->list_jobs({.team = "y", .sort = JobSort::Name, .ascending = true})),
            (std::vector<int64_t>{2, 4, 6}));
}

TEST(StoreJobSort, PagesForwardAndBackFromACursor) {
  TempDir dir;
  StorePtr store = six_jobs(dir);
  // By name ascending: 2(a) 4(a) 3(b) 6(b) 1(c) 5(c). After job 4 ("a"):
  JobFilter next{.limit = 2, .sort = JobSort::Name, .ascending = true};
  next.before = 4;
  next.before_key = "a";
  EXPECT_EQ(ids_of(*store->list_jobs(next)), (std::vector<int64_t>{3, 6}));
  // The two ahead of job 1 ("c"), in the listing's order.
  JobFilter back = next;
  back.before = 1;
  back.before_key = "c";
  back.backward = true;
  EXPECT_EQ(ids_of(*store->list_jobs(back)), (std::vector<int64_t>{3, 6}));
  back.before = 3;
  back.before_key = "b";
  EXPECT_EQ(ids_of(*store->list_jobs(back)), (std::vector<int64_t>{2, 4}));
  back.limit = 10;
  EXPECT_EQ(ids_of(*store->list_jobs(back)), (std::vector<int64_t>{2, 4}));
  // Newest first (the default): backward from job 3 gives 5, 4 with limit 2.
  JobFilter newest{.before = 3, .limit = 2, .backward = true};
  EXPECT_EQ(ids_of(*store->list_jobs(newest)), (std::vector<int64_t>{5, 4}));
  newest.backward = false;
  EXPECT_EQ(ids_of(*store->list_jobs(newest)), (std::vector<int64_t>{2, 1}));
}

TEST(StoreJobSort, NodeFilterMatchesTheWholeNodeName) {
  TempDir dir;
  StorePtr store = six_jobs(dir);
  EXPECT_EQ(ids_of(*store->list_jobs({.node = "n1"})), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(ids_of(*store->list_jobs({.node = "n10"})), (std::vector<int64_t>{4}));
  EXPECT_EQ(ids_of(*store->list_jobs({.node = "n"})), (std::vector<int64_t>{}));
  EXPECT_EQ(*store->count_jobs({.team = "x", .node = "n1"}), 2);
  EXPECT_EQ(*store->count_jobs({.node = "n\"1"}), 0);
}

}  // namespace
}  // namespace trainyard::store
