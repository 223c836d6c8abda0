// The control plane's view of Slurm habits: a pending job's estimated start and the jobs named
// in its reason come from the reconcile loop's plan; an ended job keeps its placement in the
// store, across a restart.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "plane_fixture.h"

namespace trainyard::server {
namespace {

using StartEstimatePlaneTest = PlaneTest;

TEST_F(StartEstimatePlaneTest, PendingJobStartsWhenTheRunningJobsDeadlineEnds) {
  const int64_t a = submit(job_yaml("a", 4, "  activeDeadlineSeconds: 600\n"));
  cycle();
  const util::Time started = clock_.now();
  ASSERT_EQ(job(a)["state"], "running");
  const int64_t b = submit(job_yaml("b", 2));
  cycle(60);
  const nlohmann::json j = job(b);
  ASSERT_EQ(j["state"], "pending");
  EXPECT_EQ(j["estimatedStart"], util::format_time(started + util::seconds(600)));
  EXPECT_EQ(j["estimatedStartBasis"], "replay");
  EXPECT_EQ(j["estimatedStartReason"], fmt::format("after job {} ends by runtime limit", a));
  EXPECT_NE(j["waiting"].get<std::string>().find(fmt::format(
                "waiting for 2 x H100-80GB: held by job {} (team default, 4 GPUs, limit ends in "
                "9m)",
                a)),
            std::string::npos)
      << j["waiting"];
  // Listed jobs carry it too; a running job has none.
  const auto list = plane_->list_jobs({}, admin_);
  ASSERT_TRUE(list.is_ok());
  for (const auto& item : (*list)["items"]) {
    EXPECT_EQ(item.contains("estimatedStart"), item["id"] == b) << item.dump();
  }
}

TEST_F(StartEstimatePlaneTest, HolderWithoutDeadlineLeavesTheStartUnknown) {
  const int64_t a = submit(job_yaml("a", 4));
  cycle();
  const int64_t b = submit(job_yaml("b", 1));
  cycle();
  const nlohmann::json j = job(b);
  EXPECT_TRUE(j["estimatedStart"].is_null());
  EXPECT_EQ(j["estimatedStartBasis"], "unknown");
  EXPECT_NE(j["estimatedStartReason"].get<std::string>().find(fmt::format("job {}", a)),
            std::string::npos)
      << j["estimatedStartReason"];
}

TEST_F(StartEstimatePlaneTest, EndedJobKeepsItsPlacementAcrossARestart) {
  const int64_t a = submit(job_yaml("a", 2));
  cycle();
  const nlohmann::json placed = job(a)["placement"];
  ASSERT_EQ(placed.size(), 2u);
  exec_.exit(1000, 0);
  cycle();
  ASSERT_EQ(job(a)["state"], "succeeded");
  EXPECT_EQ(job(a)["placement"], placed);
  open();
  EXPECT_EQ(job(a)["placement"], placed);
}

TEST_F(StartEstimatePlaneTest, RequeuedJobHoldsNoPlacementWhilePending) {
  const int64_t a = submit(job_yaml("a", 1));
  cycle();
  ASSERT_EQ(job(a)["placement"].size(), 1u);
  exec_.exit(1000, 75);     // checkpointed, asks to be requeued
  exec_.fail_launches = 1;  // the next attempt cannot start: it backs off, pending
  cycle();
  cycle();
  const nlohmann::json j = job(a);
  ASSERT_EQ(j["state"], "pending") << j.dump();
  EXPECT_TRUE(j["placement"].empty()) << j.dump();
  EXPECT_EQ(j["attempts"].size(), 2u);
}

}  // namespace
}  // namespace trainyard::server
