#include "server/control_plane.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fake_executor.h"

namespace trainyard::server {
namespace {

std::string job_yaml(const std::string& name, const std::string& extra_spec, int gpus) {
  return "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: " + name + "}\nspec:\n" +
         extra_spec +
         "  template:\n    command: [train]\n    resources: {limits: {nvidia.com/gpu: " +
         std::to_string(gpus) + "}}\n";
}

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ty-cp-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    open();
  }
  void TearDown() override {
    plane_.reset();
    std::filesystem::remove_all(dir_);
  }
  void open(ServerConfig config = {}) {
    plane_.reset();
    config.retry_backoff_initial = util::seconds(10);
    config_ = config;
    std::vector<telemetry::GpuDevice> gpus;
    for (int i = 0; i < 4; ++i)
      gpus.push_back({.index = i,
                      .uuid = "GPU-" + std::to_string(i),
                      .model = "H100-80GB",
                      .simulated = true});
    auto p = ControlPlane::open({.state_dir = dir_, .config = config},
                                ControlPlane::nodes_from_devices(gpus), exec_, clock_);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    plane_ = std::move(*p);
  }
  int64_t submit(const std::string& yaml) {
    auto r = plane_->submit(yaml, "job.yaml", admin_);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? (*r)["id"].get<int64_t>() : -1;
  }
  nlohmann::json job(int64_t id) { return *plane_->get_job(util::JobId(id), admin_); }
  void cycle(double advance_seconds = 0.1) {
    clock_.advance_to(clock_.now() + util::seconds_f(advance_seconds));
    ASSERT_TRUE(plane_->reconcile_once().is_ok());
  }

  std::filesystem::path dir_;
  util::VirtualClock clock_{util::kEpoch + util::seconds(1'800'000'000)};
  FakeExecutor exec_;
  ServerConfig config_;
  std::unique_ptr<ControlPlane> plane_;
  Principal admin_{.admin = true, .name = "test"};
};

TEST_F(ControlPlaneTest, StartsJobOnFreeGpusAndRecordsSuccess) {
  const int64_t id = submit(job_yaml("a", "", 2));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 1u);
  EXPECT_EQ(exec_.launches[0].visible_devices.size(), 2u);
  EXPECT_EQ(job(id)["state"], "running");
  exec_.exit(1000, 0);
  cycle();
  EXPECT_EQ(job(id)["state"], "succeeded");
  EXPECT_EQ(job(id)["attempts"][0]["outcome"], "succeeded");
}

TEST_F(ControlPlaneTest, NeverGivesAGpuToTwoJobs) {
  for (int i = 0; i < 6; ++i) submit(job_yaml("j" + std::to_string(i), "", 1));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 4u);
  std::set<std::string> used;
  for (const auto& l : exec_.launches)
    for (const auto& d : l.visible_devices) EXPECT_TRUE(used.insert(d).second) << d;
  exec_.exit(1000, 0);
  cycle();
  ASSERT_EQ(exec_.launches.size(), 5u);
  EXPECT_EQ(exec_.launches[4].visible_devices, exec_.launches[0].visible_devices);
}

TEST_F(ControlPlaneTest, FailureIsRetriedAfterExponentialBackoffThenFails) {
  const int64_t id = submit(job_yaml("flaky", "  backoffLimit: 2\n", 1));
  cycle();
  exec_.exit(1000, 3);
  cycle();
  EXPECT_EQ(job(id)["state"], "pending");
  EXPECT_EQ(job(id)["attempt"], 2);
  cycle(9);  // backoff is 10 s: not yet
  EXPECT_EQ(exec_.launches.size(), 1u);
  EXPECT_NE(job(id)["waiting"].get<std::string>().find("backing off"), std::string::npos);
  cycle(1.5);
  ASSERT_EQ(exec_.launches.size(), 2u);
  EXPECT_EQ(exec_.launches[1].attempt, 2);
  exec_.exit(1001, 3);
  cycle();
  cycle(15);  // second backoff is 20 s
  EXPECT_EQ(exec_.launches.size(), 2u);
  cycle(6);
  ASSERT_EQ(exec_.launches.size(), 3u);
  exec_.exit(1002, 3);
  cycle();
  EXPECT_EQ(job(id)["state"], "failed");
  EXPECT_EQ(job(id)["failures"], 3);
}

TEST_F(ControlPlaneTest, ExitCode75RequeuesWithoutCountingAFailure) {
  const int64_t id = submit(job_yaml("ckpt", "  backoffLimit: 0\n", 1));
  cycle();
  exec_.exit(1000, 75);
  cycle();  // requeued and, with its GPU free again, started at once
  EXPECT_EQ(job(id)["state"], "running");
  EXPECT_EQ(job(id)["attempt"], 2);
  EXPECT_EQ(job(id)["failures"], 0);
  EXPECT_EQ(job(id)["attempts"][0]["outcome"], "requeued");
  ASSERT_EQ(exec_.launches.size(), 2u);
  EXPECT_EQ(exec_.launches[1].attempt, 2);
}

TEST_F(ControlPlaneTest, WorkerThatCannotBeLaunchedIsAFailedAttempt) {
  const int64_t id = submit(job_yaml("nolaunch", "  backoffLimit: 0\n", 1));
  exec_.fail_launches = 1;
  cycle();
  cycle();
  EXPECT_EQ(job(id)["state"], "failed");
  EXPECT_NE(job(id)["reason"].get<std::string>().find("could not be started"), std::string::npos);
}

TEST_F(ControlPlaneTest, GangFailureStopsTheOtherWorkers) {
  const int64_t id = submit(job_yaml("gang", "  workers: 2\n  backoffLimit: 0\n", 1));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 2u);
  EXPECT_EQ(exec_.launches[1].rank, 1);
  EXPECT_EQ(exec_.launches[1].world_size, 2);
  EXPECT_EQ(exec_.launches[0].master_port, exec_.launches[1].master_port);
  exec_.exit(1000, 1);
  cycle();
  EXPECT_EQ(exec_.kills, std::vector<int>{1001});
  cycle();
  EXPECT_EQ(job(id)["state"], "failed");
}

TEST_F(ControlPlaneTest, PreemptionSendsNoticeThenKillsAfterGrace) {
  ServerConfig c;
  c.policy.name = "priority";
  c.policy.min_runtime = util::Duration(0);
  open(c);
  const int64_t low =
      submit(job_yaml("low", "  priorityClass: low\n  checkpoint: {gracePeriodSeconds: 30}\n", 4));
  cycle();
  const int64_t high = submit(job_yaml("high", "  priorityClass: high\n", 4));
  cycle();
  EXPECT_EQ(job(low)["state"], "preempting");
  ASSERT_EQ(exec_.notices.size(), 1u);
  EXPECT_EQ(exec_.notices[0], (std::pair<int, int>{1000, 15}));
  cycle(29);
  EXPECT_TRUE(exec_.kills.empty());
  EXPECT_EQ(job(high)["state"], "pending");
  cycle(2);  // grace over
  EXPECT_EQ(exec_.kills, std::vector<int>{1000});
  cycle();
  EXPECT_EQ(job(low)["state"], "pending");
  EXPECT_EQ(job(low)["attempt"], 2);
  EXPECT_EQ(job(low)["failures"], 0);
  cycle();
  EXPECT_EQ(job(high)["state"], "running");
}

// The goodput policy on the server: an elastic job alone takes every GPU it may use and runs with
// that many workers (world size); when a second elastic job arrives, the first is resized at its
// next checkpoint (stopped with a notice, restarted smaller) and both then share the node.
TEST_F(ControlPlaneTest, GoodputResizesAnElasticJobAtItsCheckpoint) {
  ServerConfig c;
  c.policy.name = "goodput";
  c.policy.min_runtime = util::Duration(0);
  open(c);
  const std::string elastic =
      "  elastic: {minWorkers: 1, maxWorkers: 4}\n"
      "  checkpoint: {gracePeriodSeconds: 5, intervalSeconds: 60}\n";
  const int64_t first = submit(job_yaml("first", elastic, 1));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 4u);
  for (const auto& l : exec_.launches) EXPECT_EQ(l.world_size, 4);
  EXPECT_EQ(job(first)["state"], "running");
  const int64_t second = submit(job_yaml("second", elastic, 1));
  cycle(30);  // 30 s into its attempt: less than a round (60 s) of work to lose, so it may move
  EXPECT_EQ(job(first)["state"], "preempting");
  EXPECT_NE(job(first)["reason"].get<std::string>().find("resized"), std::string::npos)
      << job(first)["reason"];
  cycle(6);  // grace over: killed
  cycle();
  cycle();
  EXPECT_EQ(job(first)["state"], "running");
  EXPECT_EQ(job(second)["state"], "running");
  ASSERT_EQ(exec_.launches.size(), 8u);  // 4 + 2 + 2
  for (size_t i = 4; i < exec_.launches.size(); ++i) EXPECT_EQ(exec_.launches[i].world_size, 2);
}

// The server reads an elastic job's pace from rank 0's step metrics (step_time_s) at the size it
// runs with, shows it, and gives it to the goodput policy.
TEST_F(ControlPlaneTest, GoodputMeasuresAnElasticJobsPaceFromItsStepMetrics) {
  ServerConfig c;
  c.policy.name = "goodput";
  open(c);
  const int64_t id = submit(job_yaml("paced", "  elastic: {minWorkers: 1, maxWorkers: 4}\n", 1));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 4u);
  EXPECT_FALSE(job(id).contains("measuredStepsPerSecond"));
  {
    const std::filesystem::path rank0 = exec_.launches[0].run_dir;
    std::filesystem::create_directories(rank0);
    std::ofstream out(rank0 / "metrics.jsonl");
    out << R"({"step": 1, "step_time_s": 0.8})"
        << "\n"
        << R"({"step": 2, "step_time_s": 0.5})"
        << "\n";
  }
  cycle(6);  // the pace is read every 5 s
  ASSERT_TRUE(job(id).contains("measuredStepsPerSecond")) << job(id).dump();
  EXPECT_DOUBLE_EQ(job(id)["measuredStepsPerSecond"]["4"].get<double>(), 2.0);
}

// An elastic job's GPU time counts the workers it ran with, as the simulator counts it
// (drive/job_history.h): placed at 4 workers of 1 GPU, 100 s of its attempt are 400
// GPU-seconds, not the 100 its spec's single worker would give.
TEST_F(ControlPlaneTest, AnElasticJobsServiceCountsTheWorkersItRanWith) {
  ServerConfig c;
  c.policy.name = "goodput";
  open(c);
  const int64_t id = submit(job_yaml("wide", "  elastic: {minWorkers: 1, maxWorkers: 4}\n", 1));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 4u);
  cycle(100);
  for (int pid = 1000; pid < 1004; ++pid) exec_.exit(pid, 0);
  cycle();
  ASSERT_EQ(job(id)["state"], "succeeded");
  EXPECT_NEAR(job(id)["attainedGpuSeconds"].get<double>(), 4 * 100.1, 0.5) << job(id).dump();
}

// Tiresias promotes a job that has waited starvation_factor times its last attempt's length to
// the first queue (it then ranks first among pending jobs; it still preempts only by its
// service queue). The server must tell the scheduler that length, as the simulator does.
TEST_F(ControlPlaneTest, TiresiasPromotesAStarvedJob) {
  ServerConfig c;
  c.policy.name = "tiresias";
  c.policy.min_runtime = util::seconds(60);
  c.policy.tiresias.queue_thresholds = {100, 100'000};  // GPU-seconds
  c.policy.tiresias.starvation_factor = 2;
  open(c);
  const int64_t a = submit(job_yaml("a", "", 4));
  cycle();
  ASSERT_EQ(job(a)["state"], "running");
  cycle(70);  // 280 GPU-seconds: a falls to the second queue
  const int64_t b = submit(job_yaml("b", "  preemptible: false\n", 4));
  cycle();  // b, in the first queue, preempts a
  ASSERT_EQ(job(a)["state"], "preempting");
  exec_.exit(1000, 75);
  cycle();
  ASSERT_EQ(job(a)["state"], "pending");
  cycle();
  ASSERT_EQ(job(b)["state"], "running");
  // c, new and in the first queue, outranks a until a has waited 2 x its 70 s run.
  const int64_t c_id = submit(job_yaml("c", "", 4));
  cycle(150);
  ASSERT_EQ(job(c_id)["state"], "pending");
  exec_.exit(1001, 0);  // b ends: its GPUs go to the job ranked first
  cycle();
  cycle();
  EXPECT_EQ(job(a)["state"], "running") << "a waited past 2 x its last run and was not promoted";
  EXPECT_EQ(job(c_id)["state"], "pending");  // the minimum run time protects a from c
}

TEST_F(ControlPlaneTest, DependencyStartsOnlyAfterSuccess) {
  const int64_t a = submit(job_yaml("a", "", 1));
  const int64_t b = submit(job_yaml("b", "  dependsOn: [a]\n", 1));
  cycle();
  ASSERT_EQ(exec_.launches.size(), 1u);
  EXPECT_NE(job(b)["waiting"].get<std::string>().find(std::to_string(a)), std::string::npos);
  exec_.exit(1000, 0);
  cycle();
  cycle();
  EXPECT_EQ(job(b)["state"], "running");
}

TEST_F(ControlPlaneTest, CancelIsDurableAcrossRestart) {
  const int64_t id = submit(job_yaml("c", "", 1));
  cycle();
  ASSERT_TRUE(plane_->cancel(util::JobId(id), admin_).is_ok());
  EXPECT_EQ(exec_.notices.size(), 1u);
  open();  // restart: the worker is still "running" in the fake executor
  EXPECT_EQ(job(id)["stopping"], "cancel");
  exec_.exit(1000, 0);
  cycle();
  EXPECT_EQ(job(id)["state"], "cancelled");
}

TEST_F(ControlPlaneTest, RestartReadoptsRunningWorkersWithoutRelaunching) {
  const int64_t id = submit(job_yaml("r", "", 2));
  cycle();
  open();
  cycle();
  EXPECT_EQ(exec_.launches.size(), 1u);
  EXPECT_EQ(job(id)["state"], "running");
  submit(job_yaml("s", "", 4));
  cycle();
  EXPECT_EQ(exec_.launches.size(), 1u);  // its GPUs are still taken after the restart
  exec_.exit(1000, 0);
  cycle();
  cycle();
  EXPECT_EQ(exec_.launches.size(), 2u);
}

TEST_F(ControlPlaneTest, TeamTokenSeesOnlyItsTeam) {
  Principal a{.team = "a", .name = "a"};
  Principal b{.team = "b", .name = "b"};
  auto r = plane_->submit(job_yaml("x", "", 1), "job.yaml", a);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)["team"], "a");
  const util::JobId id((*r)["id"].get<int64_t>());
  EXPECT_EQ(plane_->get_job(id, b).status().code(), util::StatusCode::PermissionDenied);
  EXPECT_EQ(plane_->cancel(id, b).status().code(), util::StatusCode::PermissionDenied);
  EXPECT_EQ(plane_->submit(job_yaml("y", "  team: a\n", 1), "job.yaml", b).status().code(),
            util::StatusCode::PermissionDenied);
  EXPECT_TRUE((*plane_->list_jobs({}, b))["items"].empty());
}

TEST_F(ControlPlaneTest, ImpossibleRequestsAreRefusedAtSubmission) {
  auto r = plane_->submit(job_yaml("big", "", 8), "job.yaml", admin_);
  EXPECT_EQ(r.status().code(), util::StatusCode::InvalidArgument);
  EXPECT_NE(r.status().message().find("largest node has 4"), std::string::npos);
  r = plane_->submit(job_yaml("gang", "  workers: 3\n", 2), "job.yaml", admin_);
  EXPECT_EQ(r.status().code(), util::StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace trainyard::server
