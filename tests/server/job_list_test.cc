// GET /api/v1/jobs's sorts and cursors through the control plane: pages forward and back cover
// every job once, `total` counts all matching jobs, the node filter, a team token's view, the
// label selector paging with cursors, and the parameter errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/label_selector.h"
#include "plane_fixture.h"
#include "server/job_list_query.h"

namespace trainyard::server {
namespace {

std::string team_yaml(const std::string& name, const std::string& team, const std::string& tier) {
  return "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: " + name +
         ", labels: {tier: " + tier + "}}\nspec:\n  team: " + team +
         "\n  template:\n    command: [train]\n    resources: {limits: {nvidia.com/gpu: 4}}\n";
}

std::vector<int64_t> ids(const nlohmann::json& page) {
  std::vector<int64_t> out;
  for (const auto& j : page["items"]) out.push_back(j["id"].get<int64_t>());
  return out;
}

class JobListTest : public PlaneTest {
 protected:
  void SetUp() override {
    PlaneTest::SetUp();
    // Names d, b, c, a, b, e, c (ids 1..7), teams x/y alternating, tiers gold for odd ids.
    const char* names[] = {"d", "b", "c", "a", "b", "e", "c"};
    for (int i = 0; i < 7; ++i)
      submit(team_yaml(names[i], i % 2 == 0 ? "x" : "y", i % 2 == 0 ? "gold" : "tin"));
  }
  nlohmann::json list(const std::string& sort, const std::string& order, const std::string& cursor,
                      int limit, const Principal& who) {
    store::JobFilter f{.limit = limit};
    EXPECT_TRUE(apply_job_list_params(sort, order, cursor, f).is_ok());
    auto r = plane_->list_jobs(f, who);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? *r : nlohmann::json();
  }
};

TEST_F(JobListTest, NamePagesForwardThenBackCoverEveryJobOnce) {
  auto p1 = list("name", "", "", 3, admin_);
  EXPECT_EQ(ids(p1), (std::vector<int64_t>{4, 2, 5}));
  EXPECT_EQ(p1["total"], 7);
  EXPECT_TRUE(p1["hasMore"].get<bool>());
  EXPECT_FALSE(p1.contains("prevCursor"));
  EXPECT_FALSE(p1.contains("nextBefore"));  // only the newest-first order has it
  auto p2 = list("name", "", p1["nextCursor"], 3, admin_);
  EXPECT_EQ(ids(p2), (std::vector<int64_t>{3, 7, 1}));
  auto p3 = list("name", "", p2["nextCursor"], 3, admin_);
  EXPECT_EQ(ids(p3), (std::vector<int64_t>{6}));
  EXPECT_FALSE(p3["hasMore"].get<bool>());
  EXPECT_FALSE(p3.contains("nextCursor"));
  auto back2 = list("name", "", p3["prevCursor"], 3, admin_);
  EXPECT_EQ(ids(back2), ids(p2));
  auto back1 = list("name", "", back2["prevCursor"], 3, admin_);
  EXPECT_EQ(ids(back1), ids(p1));
  EXPECT_FALSE(back1.contains("prevCursor"));
  EXPECT_EQ(back1["nextCursor"], p1["nextCursor"]);
}

TEST_F(JobListTest, NewestFirstKeepsNextBeforeAndTeamTokensSeeTheirTeam) {
  auto p1 = list("", "", "", 5, admin_);
  EXPECT_EQ(ids(p1), (std::vector<int64_t>{7, 6, 5, 4, 3}));
  EXPECT_EQ(p1["nextBefore"], 3);
  const Principal y{.team = "y", .name = "y-token"};
  auto mine = list("team", "desc", "", 10, y);
  EXPECT_EQ(ids(mine), (std::vector<int64_t>{6, 4, 2}));
  EXPECT_EQ(mine["total"], 3);
  auto by_state = list("state", "asc", "", 10, admin_);
  EXPECT_EQ(by_state["items"].size(), 7u);
}

TEST_F(JobListTest, NodeFilterFindsJobsPlacedThere) {
  cycle();  // the first job takes all 4 GPUs; the others wait
  const auto first = job(1);
  ASSERT_FALSE(first["placement"].empty());
  store::JobFilter on{.node = first["placement"][0]["node"].get<std::string>()};
  auto there = plane_->list_jobs(on, admin_);
  ASSERT_TRUE(there.is_ok());
  EXPECT_EQ(ids(*there), (std::vector<int64_t>{1}));
  EXPECT_EQ((*there)["total"], 1);
  store::JobFilter f{.node = "nowhere"};
  auto none = plane_->list_jobs(f, admin_);
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ((*none)["total"], 0);
  EXPECT_TRUE((*none)["items"].empty());
}

TEST_F(JobListTest, LabelSelectorPagesWithCursors) {
  auto gold = model::parse_label_selector("tier=gold");
  ASSERT_TRUE(gold.is_ok());
  store::JobFilter f{.limit = 2};
  ASSERT_TRUE(apply_job_list_params("name", "", "", f).is_ok());
  auto p1 = plane_->list_jobs_matching(f, *gold, admin_);
  ASSERT_TRUE(p1.is_ok());
  // Gold: ids 1 (d), 3 (c), 5 (b), 7 (c); by name: 5, 3, 7, 1.
  EXPECT_EQ(ids(*p1), (std::vector<int64_t>{5, 3}));
  ASSERT_TRUE(p1->contains("nextCursor"));
  store::JobFilter f2{.limit = 2};
  ASSERT_TRUE(
      apply_job_list_params("name", "", (*p1)["nextCursor"].get<std::string>(), f2).is_ok());
  auto p2 = plane_->list_jobs_matching(f2, *gold, admin_);
  ASSERT_TRUE(p2.is_ok());
  EXPECT_EQ(ids(*p2), (std::vector<int64_t>{7, 1}));
  store::JobFilter f3{.limit = 2};
  ASSERT_TRUE(
      apply_job_list_params("name", "", (*p2)["prevCursor"].get<std::string>(), f3).is_ok());
  auto back = plane_->list_jobs_matching(f3, *gold, admin_);
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(ids(*back), (std::vector<int64_t>{5, 3}));
}

TEST(JobListParams, RefusesUnknownSortsOrdersAndForeignCursors) {
  store::JobFilter f;
  EXPECT_EQ(apply_job_list_params("gpus", "", "", f).code(), util::StatusCode::InvalidArgument);
  EXPECT_EQ(apply_job_list_params("id", "up", "", f).code(), util::StatusCode::InvalidArgument);
  EXPECT_EQ(apply_job_list_params("id", "", "x:1", f).code(), util::StatusCode::InvalidArgument);
  EXPECT_EQ(apply_job_list_params("team", "", "n:name:3:a", f).code(),
            util::StatusCode::InvalidArgument);
  EXPECT_EQ(apply_job_list_params("id", "", "n:id:-3:", f).code(),
            util::StatusCode::InvalidArgument);
  ASSERT_TRUE(apply_job_list_params("team", "", "p:team:3:a:b", f).is_ok());
  EXPECT_TRUE(f.ascending);
  EXPECT_TRUE(f.backward);
  EXPECT_EQ(f.before, 3);
  EXPECT_EQ(f.before_key, "a:b");
}

}  // namespace
}  // namespace trainyard::server
