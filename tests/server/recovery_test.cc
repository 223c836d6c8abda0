// Recovery never drops a stored job: a job whose stored spec no longer parses is ended with that
// reason and keeps its GPUs until its processes are gone, and a crash between Placed and launch
// requeues the job without counting a failure.
#include <gtest/gtest.h>

#include <filesystem>

#include "plane_fixture.h"
#include "store/store.h"

namespace trainyard::server {
namespace {

class RecoveryTest : public PlaneTest {
 protected:
  void SetUp() override {
    PlaneTest::SetUp();
    ServerConfig config;
    config.retry_backoff_initial = util::seconds(10);
    config_ = config;
    open(config_);
  }
  void reopen() { open(config_); }
  // Stops the server and changes what the store holds for job `id`, as a crash or an older
  // version could have left it.
  void edit_stored(int64_t id, const std::function<void(store::Store&, store::JobRecord&)>& edit) {
    plane_.reset();
    auto s = store::Store::open(dir_ / "state.db");
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    auto rec = (*s)->get_job(util::JobId(id));
    ASSERT_TRUE(rec.is_ok() && rec->has_value());
    edit(**s, **rec);
    ASSERT_TRUE((*s)->update_job(**rec).is_ok());
  }

  ServerConfig config_;
};

TEST_F(RecoveryTest, RunningJobWithUnreadableSpecKeepsItsGpusUntilItsProcessesAreGone) {
  const int64_t id = submit(job_yaml("old", 4));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 1u);
  const int pid = 1000;
  edit_stored(id, [](store::Store&, store::JobRecord& rec) { rec.manifest_json = "{\"spec\": ["; });
  exec_.kills_take_effect = false;  // the worker takes a while to die
  reopen();
  const auto j = job(id);  // not dropped
  EXPECT_EQ(j["state"], "running");
  const int64_t waiting = submit(job_yaml("next", 4));
  cycle();
  cycle();
  EXPECT_GE(std::count(exec_.kills.begin(), exec_.kills.end(), pid), 1);
  EXPECT_EQ(exec_.launches.size(), 1u) << "its GPUs were given away while its worker runs";
  EXPECT_EQ(job(waiting)["state"], "pending");
  exec_.exit(pid, 137);
  cycle();
  EXPECT_EQ(job(id)["state"], "failed");
  EXPECT_NE(job(id)["reason"].get<std::string>().find("stored spec cannot be read back"),
            std::string::npos)
      << job(id)["reason"];
  cycle();
  ASSERT_EQ(exec_.launches.size(), 2u);
  EXPECT_EQ(exec_.launches[1].job, util::JobId(waiting));
}

TEST_F(RecoveryTest, GangWithUnreadableSpecBooksEveryWorkersGpus) {
  const int64_t id = submit(job_yaml("gang", 2, "  workers: 2\n"));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 2u);
  edit_stored(id, [](store::Store&, store::JobRecord& rec) { rec.manifest_json = "garbage: ["; });
  exec_.kills_take_effect = false;
  reopen();
  const int64_t one = submit(job_yaml("one", 1));
  cycle();
  EXPECT_EQ(exec_.launches.size(), 2u) << "a GPU of the gang was given away";
  exec_.exit(1000, 137);
  cycle();
  EXPECT_EQ(exec_.launches.size(), 2u) << "rank 1 still holds its GPUs";
  exec_.exit(1001, 137);
  cycle();
  cycle();
  EXPECT_EQ(job(id)["state"], "failed");
  ASSERT_EQ(exec_.launches.size(), 3u);
  EXPECT_EQ(exec_.launches[2].job, util::JobId(one));
}

TEST_F(RecoveryTest, PendingJobWithUnreadableSpecEndsWithTheReason) {
  submit(job_yaml("big", 4));
  cycle();
  const int64_t id = submit(job_yaml("queued", 4));
  cycle();
  ASSERT_EQ(job(id)["state"], "pending");
  edit_stored(id, [](store::Store&, store::JobRecord& rec) { rec.manifest_json = ""; });
  reopen();
  const auto j = job(id);
  EXPECT_EQ(j["state"], "failed");
  EXPECT_NE(j["reason"].get<std::string>().find("submit the job again"), std::string::npos);
}

TEST_F(RecoveryTest, CrashBetweenPlacedAndLaunchRequeuesWithoutCountingAFailure) {
  const int64_t id = submit(job_yaml("placed", 2, "  backoffLimit: 0\n"));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 1u);
  // As if the server died after committing Placed and before launching: no pids anywhere.
  exec_.status.erase(1000);
  edit_stored(id, [](store::Store& s, store::JobRecord& rec) {
    rec.state = model::JobState::Placed;
    ASSERT_TRUE(s.put_attempt({.job = rec.id,
                               .attempt = rec.attempt,
                               .started = rec.started,
                               .placement_json = rec.placement_json})
                    .is_ok());
  });
  reopen();
  auto j = job(id);
  EXPECT_EQ(j["state"], "pending");
  EXPECT_EQ(j["failures"], 0);
  cycle();  // no backoff: it starts again at once
  ASSERT_EQ(exec_.launches.size(), 2u);
  EXPECT_EQ(job(id)["state"], "running");
  exec_.exit(1001, 0);
  cycle();
  EXPECT_EQ(job(id)["state"], "succeeded");
}

TEST_F(RecoveryTest, PartlyLaunchedGangIsStoppedAndRequeuedWithoutCountingAFailure) {
  const int64_t id = submit(job_yaml("part", 1, "  workers: 2\n  backoffLimit: 0\n"));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 2u);
  // Rank 0 was started, rank 1 never was.
  exec_.status.erase(1001);
  edit_stored(id, [](store::Store& s, store::JobRecord& rec) {
    rec.state = model::JobState::Placed;
    const std::string procs = R"([{"rank":0,"pid":1000,"start_ticks":10000,"run_dir":"x"}])";
    ASSERT_TRUE(s.put_attempt({.job = rec.id,
                               .attempt = rec.attempt,
                               .started = rec.started,
                               .placement_json = rec.placement_json,
                               .processes_json = procs})
                    .is_ok());
  });
  reopen();
  cycle();
  EXPECT_GE(std::count(exec_.kills.begin(), exec_.kills.end(), 1000), 1);
  auto j = job(id);
  EXPECT_EQ(j["failures"], 0);
  EXPECT_NE(j["state"], "failed");
  cycle();
  cycle();
  EXPECT_EQ(exec_.launches.size(), 4u) << "requeued and started again";
}

}  // namespace
}  // namespace trainyard::server
