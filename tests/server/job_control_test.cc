// Job arrays, holds and priority updates through the control plane with the fake executor: the
// %N limit is kept cycle after cycle, held jobs never start (also after a restart), and a priority
// class changed while pending decides the next start.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "plane_fixture.h"

namespace trainyard::server {
namespace {

class JobControlTest : public PlaneTest {
 protected:
  // Jobs of `ids` that hold workers now (a launch whose worker still runs).
  int running(const std::vector<int64_t>& ids) {
    int n = 0;
    for (int64_t id : ids) n += job(id)["state"] == "running" ? 1 : 0;
    return n;
  }
  // The pid of the newest launch of job `id`; -1 if none.
  int pid_of(int64_t id) {
    for (size_t i = exec_.launches.size(); i-- > 0;)
      if (exec_.launches[i].job.value() == id) return 1000 + static_cast<int>(i);
    return -1;
  }
  std::vector<int64_t> array_ids(const nlohmann::json& submitted) {
    std::vector<int64_t> ids;
    for (int64_t id = submitted["id"].get<int64_t>(); id <= submitted["lastId"].get<int64_t>();
         ++id)
      ids.push_back(id);
    return ids;
  }
  static std::string env_of(const exec::WorkerLaunch& l, const std::string& name) {
    for (const auto& [k, v] : l.env)
      if (k == name) return v;
    return "";
  }
};

TEST_F(JobControlTest, ArraySubmissionCreatesOneNamedJobPerIndex) {
  auto r = plane_->submit(job_yaml("sweep", 1, "  array: \"1,3,8-12:2\"\n"), "job.yaml", admin_);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)["arrayTasks"], 5);
  const auto ids = array_ids(*r);
  ASSERT_EQ(ids.size(), 5u);
  const int expected_index[] = {1, 3, 8, 10, 12};
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto j = job(ids[i]);
    EXPECT_EQ(j["name"], "sweep-" + std::to_string(expected_index[i]));
    EXPECT_EQ(j["array"]["jobId"], ids.front());
    EXPECT_EQ(j["array"]["index"], expected_index[i]);
  }
  store::JobFilter only_array{.array_job_id = ids.front()};
  auto listed = plane_->list_jobs(only_array, admin_);
  ASSERT_TRUE(listed.is_ok());
  EXPECT_EQ((*listed)["items"].size(), 5u);
}

TEST_F(JobControlTest, ArrayLimitKeepsAtMostNTasksRunning) {
  auto r = plane_->submit(job_yaml("sweep", 1, "  array: 0-5%2\n"), "job.yaml", admin_);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const auto ids = array_ids(*r);
  cycle();
  cycle();
  EXPECT_EQ(running(ids), 2) << "4 free GPUs, but %2";
  const std::string waiting = job(ids[2])["waiting"];
  EXPECT_NE(waiting.find("array limit"), std::string::npos) << waiting;
  EXPECT_NE(waiting.find("%2"), std::string::npos) << waiting;
  // Tasks start lowest index first, and each gets its index and the array's id.
  EXPECT_EQ(job(ids[0])["state"], "running");
  EXPECT_EQ(job(ids[1])["state"], "running");
  ASSERT_EQ(exec_.launches.size(), 2u);
  EXPECT_EQ(env_of(exec_.launches[1], "TRAINYARD_ARRAY_INDEX"), "1");
  EXPECT_EQ(env_of(exec_.launches[1], "TRAINYARD_ARRAY_JOB_ID"), std::to_string(ids[0]));
  // As tasks end, the next ones start, never more than two at once.
  for (int round = 0; round < 6; ++round) {
    for (int64_t id : ids) {
      if (job(id)["state"] == "running") {
        exec_.exit(pid_of(id), 0);
        break;
      }
    }
    cycle();
    cycle();
    EXPECT_LE(running(ids), 2);
  }
  for (int64_t id : ids) EXPECT_EQ(job(id)["state"], "succeeded") << id;
}

TEST_F(JobControlTest, HeldJobWaitsAcrossRestartUntilReleased) {
  const int64_t id = submit(job_yaml("held-one", 1));
  auto held = plane_->hold(util::JobId(id), admin_);
  ASSERT_TRUE(held.is_ok()) << held.status().to_string();
  EXPECT_EQ((*held)["held"], true);
  cycle();
  EXPECT_EQ(job(id)["state"], "pending");
  EXPECT_NE(job(id)["waiting"].get<std::string>().find("held by user"), std::string::npos);
  open();  // a restart reads the hold back from the store
  cycle();
  EXPECT_EQ(job(id)["state"], "pending");
  EXPECT_EQ(job(id)["held"], true);
  EXPECT_NE(job(id)["waiting"].get<std::string>().find("held by user"), std::string::npos);
  ASSERT_TRUE(plane_->release(util::JobId(id), admin_).is_ok());
  cycle();
  EXPECT_EQ(job(id)["state"], "running");
  EXPECT_EQ(job(id)["held"], false);
}

TEST_F(JobControlTest, HoldOfARunningJobIsRefused) {
  const int64_t id = submit(job_yaml("busy", 1));
  cycle();
  ASSERT_EQ(job(id)["state"], "running");
  auto held = plane_->hold(util::JobId(id), admin_);
  ASSERT_FALSE(held.is_ok());
  EXPECT_EQ(held.status().code(), util::StatusCode::FailedPrecondition);
  EXPECT_NE(held.status().message().find("only a pending job can be held"), std::string::npos)
      << held.status().message();
}

TEST_F(JobControlTest, TeamTokenCannotHoldAnotherTeamsJob) {
  const int64_t id = submit(job_yaml("theirs", 1, "  team: vision\n"));
  const Principal nlp{.team = "nlp", .name = "nlp-token"};
  auto held = plane_->hold(util::JobId(id), nlp);
  ASSERT_FALSE(held.is_ok());
  EXPECT_EQ(held.status().code(), util::StatusCode::PermissionDenied);
  EXPECT_FALSE(plane_->update(util::JobId(id), R"({"priorityClass": "high"})", nlp).is_ok());
  EXPECT_EQ(job(id)["held"], false);
}

TEST_F(JobControlTest, RaisedPriorityClassDecidesTheNextStartAndIsStored) {
  ServerConfig config;
  config.policy.name = "priority";
  open(config, 1);
  const int64_t first = submit(job_yaml("first", 1));
  cycle();
  ASSERT_EQ(job(first)["state"], "running");
  const int64_t normal = submit(job_yaml("normal-one", 1));
  const int64_t low = submit(job_yaml("low-one", 1, "  priorityClass: low\n"));
  auto updated = plane_->update(util::JobId(low), R"({"priorityClass": "high"})", admin_);
  ASSERT_TRUE(updated.is_ok()) << updated.status().to_string();
  EXPECT_EQ((*updated)["priority"], model::kPriorityHigh);
  exec_.exit(pid_of(first), 0);
  cycle();
  cycle();
  EXPECT_EQ(job(low)["state"], "running");
  EXPECT_EQ(job(normal)["state"], "pending");
  open(config, 1);  // the new class is in the stored spec
  EXPECT_EQ(job(low)["spec"]["spec"]["priorityClass"], "high");
  EXPECT_EQ(job(low)["priority"], model::kPriorityHigh);
}

TEST_F(JobControlTest, UpdateIsRefusedForRunningJobsAndUnknownClasses) {
  const int64_t id = submit(job_yaml("busy", 1));
  cycle();
  auto running_update = plane_->update(util::JobId(id), R"({"priorityClass": "high"})", admin_);
  ASSERT_FALSE(running_update.is_ok());
  EXPECT_EQ(running_update.status().code(), util::StatusCode::FailedPrecondition);
  EXPECT_NE(running_update.status().message().find("only a pending job can be updated"),
            std::string::npos);
  const int64_t pending = submit(job_yaml("waiting", 4));
  auto bad = plane_->update(util::JobId(pending), R"({"priorityClass": "urgent"})", admin_);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), util::StatusCode::InvalidArgument);
  EXPECT_NE(bad.status().message().find("low, normal, high"), std::string::npos);
}

TEST_F(JobControlTest, CancellingAnArrayEndsEveryTask) {
  auto r = plane_->submit(job_yaml("sweep", 1, "  array: 0-4%2\n"), "job.yaml", admin_);
  ASSERT_TRUE(r.is_ok());
  const auto ids = array_ids(*r);
  cycle();
  ASSERT_EQ(running(ids), 2);
  auto cancelled = plane_->cancel_array(util::JobId(ids[0]), admin_);
  ASSERT_TRUE(cancelled.is_ok()) << cancelled.status().to_string();
  EXPECT_EQ((*cancelled)["cancelled"].size(), 3u);
  EXPECT_EQ((*cancelled)["cancelling"].size(), 2u);
  for (int i = 0; i < 3; ++i) cycle(40);  // past the grace period
  for (int64_t id : ids) EXPECT_EQ(job(id)["state"], "cancelled") << id;
  auto not_array = plane_->cancel_array(util::JobId(ids[1]), admin_);
  EXPECT_EQ(not_array.status().code(), util::StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace trainyard::server
