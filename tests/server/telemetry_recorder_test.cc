#include "server/telemetry_recorder.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/config.h"

namespace trainyard::server {
namespace {

// Two GPUs whose utilization the test sets; GPU-1 reports the processes the test lists.
class FakeSampler final : public telemetry::GpuSampler {
 public:
  util::Result<std::vector<telemetry::GpuDevice>> devices() override {
    return std::vector<telemetry::GpuDevice>{};
  }
  util::Result<std::vector<telemetry::GpuSample>> sample(util::Time now) override {
    if (fail) return util::unavailable("driver gone");
    std::vector<telemetry::GpuSample> out;
    for (int i = 0; i < 2; ++i) {
      telemetry::GpuSample s;
      s.time = now;
      s.index = i;
      s.uuid = "GPU-" + std::to_string(i);
      s.gpu_util_percent = util[i];
      s.memory_used_bytes = static_cast<uint64_t>(util[i]) << 20;
      s.memory_total_bytes = uint64_t{80} << 30;
      s.throttle_reasons = throttle[i];
      if (i == 0) s.tensor_active_percent = util[i] / 2;  // GPU 1 reports none
      if (i == 1)
        for (int pid : pids) s.processes.push_back({.pid = pid});
      out.push_back(std::move(s));
    }
    return out;
  }
  void set_synthetic_load(const std::string& uuid,
                          std::optional<telemetry::SyntheticLoad> load) override {
    loads.emplace_back(uuid, std::move(load));
  }
  std::string_view kind() const override { return "fake"; }

  double util[2] = {0, 0};
  uint64_t throttle[2] = {0, 0};
  std::vector<int> pids;
  bool fail = false;
  std::vector<std::pair<std::string, std::optional<telemetry::SyntheticLoad>>> loads;
};

struct Written {
  std::vector<store::TelemetryMinute> rows;
  util::Time prune_before{};
  int calls = 0;
};

class TelemetryRecorderTest : public ::testing::Test {
 protected:
  TelemetryRecorder make(int ring = 100) {
    return TelemetryRecorder(
        sampler_, clock_,
        {.interval = std::chrono::seconds(1),
         .ring_samples = ring,
         .retention_days = 30,
         .sink =
             [this](const std::vector<store::TelemetryMinute>& rows, util::Time prune_before) {
               written_.rows.insert(written_.rows.end(), rows.begin(), rows.end());
               written_.prune_before = prune_before;
               written_.calls += 1;
               return util::Status::ok();
             },
         // Worker wrappers 500 and 600 lead their sessions; 501 is a child of 500.
         .session_of = [](int pid) -> std::optional<int> {
           if (pid == 500 || pid == 501) return 500;
           if (pid == 600) return 600;
           return std::nullopt;
         }});
  }
  static constexpr int64_t kMinute0 = 1'800'000'000'000 - (1'800'000'000'000 % 60'000);

  FakeSampler sampler_;
  util::VirtualClock clock_{util::kEpoch + util::seconds(1'800'000'000)};
  Written written_;
};

TEST_F(TelemetryRecorderTest, AttributesByPlacementAndByProcessSession) {
  TelemetryRecorder r = make();
  TelemetryPlacements p;
  p.by_device["GPU-0"] = {{.id = 7, .name = "a", .team = "vision"}};
  p.by_session[500] = {.id = 7, .name = "a", .team = "vision"};
  p.by_session[600] = {.id = 8, .name = "b", .team = "nlp"};
  r.set_placements(p);
  sampler_.pids = {501, 999};  // 501 is job 7's (session 500), 999 is nobody's
  ASSERT_TRUE(r.record_once(util::from_millis(kMinute0 + 1000)).is_ok());
  const auto latest = r.latest();
  ASSERT_EQ(latest.size(), 2u);
  ASSERT_EQ(latest[0].jobs.size(), 1u);
  EXPECT_EQ(latest[0].jobs[0].id, 7);
  // GPU-1 is not job 7's by placement, but a process of its worker runs there.
  ASSERT_EQ(latest[1].jobs.size(), 1u);
  EXPECT_EQ(latest[1].jobs[0].id, 7);
  EXPECT_EQ(latest[1].process_job.at(501), 7);
  EXPECT_FALSE(latest[1].process_job.contains(999));
}

TEST_F(TelemetryRecorderTest, JobOnAnUnreportedMigDeviceIsSeenOnItsGpu) {
  TelemetryRecorder r = make();
  TelemetryPlacements p;
  p.by_device["MIG-0-a"] = {{.id = 5, .name = "m", .team = "t"}};
  p.parent_of["MIG-0-a"] = "GPU-0";
  p.by_device["MIG-1-b"] = {{.id = 6, .name = "n", .team = "t"}};
  p.parent_of["MIG-1-b"] = "GPU-9";  // a GPU the sampler does not report either
  r.set_placements(p);
  ASSERT_TRUE(r.record_once(util::from_millis(kMinute0)).is_ok());
  const auto latest = r.latest();
  ASSERT_EQ(latest[0].jobs.size(), 1u);
  EXPECT_EQ(latest[0].jobs[0].id, 5);
  EXPECT_TRUE(latest[1].jobs.empty());
}

TEST_F(TelemetryRecorderTest, WritesOneRowPerDeviceJobAndMinuteWhenTheMinuteCloses) {
  TelemetryRecorder r = make();
  TelemetryPlacements p;
  p.by_device["GPU-0"] = {{.id = 7, .name = "a", .team = "vision"}};
  r.set_placements(p);
  sampler_.throttle[0] = 0x8;
  for (int s = 0; s < 4; ++s) {
    sampler_.util[0] = 10.0 * (s + 1);  // 10, 20, 30, 40
    if (s == 3) sampler_.throttle[0] = 0x20;
    ASSERT_TRUE(r.record_once(util::from_millis(kMinute0 + s * 10'000)).is_ok());
  }
  EXPECT_EQ(written_.calls, 0);  // nothing closed yet: writes are batched per minute
  ASSERT_TRUE(r.record_once(util::from_millis(kMinute0 + 60'000)).is_ok());
  ASSERT_EQ(written_.calls, 1);
  ASSERT_EQ(written_.rows.size(), 2u);
  const auto& job_row =
      written_.rows[0].device_uuid == "GPU-0" ? written_.rows[0] : written_.rows[1];
  const auto& idle_row =
      written_.rows[0].device_uuid == "GPU-0" ? written_.rows[1] : written_.rows[0];
  EXPECT_EQ(job_row.job, util::JobId(7));
  EXPECT_FALSE(idle_row.job.has_value());
  EXPECT_EQ(job_row.samples, 4);
  EXPECT_EQ(job_row.minute, util::Time(std::chrono::milliseconds(kMinute0)));
  EXPECT_DOUBLE_EQ(*job_row.gpu_util_avg, 25.0);
  EXPECT_DOUBLE_EQ(*job_row.gpu_util_max, 40.0);
  EXPECT_EQ(job_row.mem_used_max, int64_t{40} << 20);
  EXPECT_EQ(job_row.throttle_or, 0x28);
  EXPECT_DOUBLE_EQ(job_row.tensor_active_avg.value_or(-1), 12.5);  // percent, like gpu_util_avg
  EXPECT_FALSE(idle_row.tensor_active_avg.has_value());
  EXPECT_EQ(written_.prune_before,
            util::Time(std::chrono::milliseconds(kMinute0 + 60'000)) - std::chrono::hours(24 * 30));
  // stop() (here: flush) writes the minute in progress.
  ASSERT_TRUE(r.flush().is_ok());
  EXPECT_EQ(written_.calls, 2);
  EXPECT_EQ(written_.rows.size(), 4u);
}

TEST_F(TelemetryRecorderTest, ReportsEachRoundToItsListener) {
  std::vector<std::pair<int64_t, size_t>> rounds;
  TelemetryRecorder r(sampler_, clock_,
                      {.on_round = [&](util::Time now, const std::vector<AttributedSample>& round) {
                        rounds.emplace_back(util::to_millis(now), round.size());
                      }});
  ASSERT_TRUE(r.record_once(util::from_millis(kMinute0)).is_ok());
  sampler_.fail = true;
  EXPECT_FALSE(r.record_once(util::from_millis(kMinute0 + 1000)).is_ok());
  ASSERT_EQ(rounds.size(), 1u);  // a failed round reports nothing
  EXPECT_EQ(rounds[0], std::make_pair(kMinute0, size_t{2}));
}

TEST_F(TelemetryRecorderTest, RingKeepsTheNewestSamplesAndFindsAJobsOwn) {
  TelemetryRecorder r = make(/*ring=*/3);
  TelemetryPlacements p;
  p.by_device["GPU-1"] = {{.id = 9, .name = "a", .team = "t"}};
  r.set_placements(p);
  for (int s = 0; s < 5; ++s)
    ASSERT_TRUE(r.record_once(util::from_millis(kMinute0 + s * 1000)).is_ok());
  auto mine = r.recent_for_job(9, util::from_millis(0));
  ASSERT_EQ(mine.size(), 3u);
  EXPECT_EQ(mine.front().time, util::from_millis(kMinute0 + 2000));
  EXPECT_EQ(mine.back().uuid, "GPU-1");
  EXPECT_EQ(r.recent_for_job(9, util::from_millis(kMinute0 + 4000)).size(), 1u);
  EXPECT_TRUE(r.recent_for_job(10, util::from_millis(0)).empty());
}

TEST_F(TelemetryRecorderTest, SetsSyntheticLoadsOnceAndClearsThemWhenTheJobLeaves) {
  TelemetryRecorder r = make();
  TelemetryPlacements p;
  p.loads["GPU-0"] = {
      .job_id = "7", .profile = "data-bound", .start = util::from_millis(5), .pids = {500}};
  r.set_placements(p);
  r.set_placements(p);  // unchanged: not set again
  ASSERT_EQ(sampler_.loads.size(), 1u);
  EXPECT_EQ(sampler_.loads[0].first, "GPU-0");
  ASSERT_TRUE(sampler_.loads[0].second.has_value());
  EXPECT_EQ(sampler_.loads[0].second->profile, "data-bound");
  r.set_placements({});
  ASSERT_EQ(sampler_.loads.size(), 2u);
  EXPECT_FALSE(sampler_.loads[1].second.has_value());
}

TEST_F(TelemetryRecorderTest, FeedsTheDataWaitShareFromTheJobsStepMetrics) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("ty-metrics-" + std::to_string(::getpid()) + ".jsonl");
  {
    std::ofstream out(file);
    out << R"({"step": 10, "step_time_s": 0.5, "data_wait_s": 0.2})"
        << "\n";
  }
  TelemetryRecorder r = make();
  TelemetryPlacements p;
  p.loads["GPU-0"] = {.job_id = "7", .pids = {500}};
  p.metrics_files["GPU-0"] = file.string();
  r.set_placements(p);
  ASSERT_TRUE(r.record_once(util::from_millis(kMinute0)).is_ok());
  std::filesystem::remove(file);
  ASSERT_EQ(sampler_.loads.size(), 2u);
  ASSERT_TRUE(sampler_.loads[1].second && sampler_.loads[1].second->data_wait_fraction);
  EXPECT_DOUBLE_EQ(*sampler_.loads[1].second->data_wait_fraction, 0.4);
}

TEST_F(TelemetryRecorderTest, FeedsTheDtypeFromTheJobsStepMetricsEvenWithoutDataWaits) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("ty-metrics-dtype-" + std::to_string(::getpid()) + ".jsonl");
  {
    std::ofstream out(file);
    out << R"({"step": 10, "step_time_s": 0.5, "dtype": "fp32"})"
        << "\n";
  }
  TelemetryRecorder r = make();
  TelemetryPlacements p;
  p.loads["GPU-0"] = {.job_id = "7", .pids = {500}};
  p.metrics_files["GPU-0"] = file.string();
  r.set_placements(p);
  ASSERT_TRUE(r.record_once(util::from_millis(kMinute0)).is_ok());
  std::filesystem::remove(file);
  ASSERT_EQ(sampler_.loads.size(), 2u);
  ASSERT_TRUE(sampler_.loads[1].second.has_value());
  EXPECT_EQ(sampler_.loads[1].second->dtype, "fp32");
  EXPECT_FALSE(sampler_.loads[1].second->data_wait_fraction.has_value());
  // Placements set again (the next reconcile) keep what the metrics said.
  r.set_placements(p);
  EXPECT_EQ(sampler_.loads.size(), 2u);  // unchanged load: not applied again
}

TEST_F(TelemetryRecorderTest, SamplerFailureIsAnErrorAndKeepsTheLastReading) {
  TelemetryRecorder r = make();
  ASSERT_TRUE(r.record_once(util::from_millis(kMinute0)).is_ok());
  sampler_.fail = true;
  EXPECT_EQ(r.record_once(util::from_millis(kMinute0 + 1000)).code(),
            util::StatusCode::Unavailable);
  ASSERT_EQ(r.latest().size(), 2u);
  EXPECT_EQ(util::to_millis(r.latest()[0].sample.time), kMinute0);
}

TEST(SessionOfPid, ReadsThisProcesssSession) {
  // A session whose leader lives outside this pid namespace reads as 0 (containers): unknown.
  const pid_t own = ::getsid(0);
  if (own > 0) {
    EXPECT_EQ(session_of_pid(::getpid()), static_cast<int>(own));
  } else {
    EXPECT_FALSE(session_of_pid(::getpid()).has_value());
  }
  EXPECT_FALSE(session_of_pid(-1).has_value());
}

TEST(SessionOfPid, ReadsTheSessionAChildLeads) {
  // A child that calls setsid() leads a session whose id is its own pid, in any namespace.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setsid();
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  EXPECT_EQ(session_of_pid(child), static_cast<int>(child));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(TelemetryConfig, ParsesKeysWithDefaultsAndPreciseErrors) {
  auto c = parse_server_config("telemetry: {interval: 0.5, ringSamples: 600, retentionDays: 7}\n",
                               "c.yaml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->telemetry.interval, util::seconds_f(0.5));
  EXPECT_EQ(c->telemetry.ring_samples, 600);
  EXPECT_EQ(c->telemetry.retention_days, 7);
  auto d = parse_server_config("policy: fifo\n", "c.yaml");
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->telemetry.interval, util::seconds(1));
  EXPECT_EQ(d->telemetry.ring_samples, 3600);
  EXPECT_EQ(d->telemetry.retention_days, 30);
  auto bad = parse_server_config("telemetry:\n  ringSamples: many\n", "c.yaml");
  EXPECT_EQ(bad.status().message(),
            "c.yaml:2:16: telemetry.ringSamples must be a whole number from 1 to 1000000, got "
            "\"many\"");
  bad = parse_server_config("telemetry: {intervl: 1}\n", "c.yaml");
  EXPECT_NE(bad.status().message().find(
                "unknown field \"telemetry.intervl\" (did you mean \"interval\"?"),
            std::string::npos)
      << bad.status().message();
  bad = parse_server_config("telemetry: {interval: 0}\n", "c.yaml");
  EXPECT_NE(bad.status().message().find("telemetry.interval must be a number of seconds"),
            std::string::npos);
  bad = parse_server_config("telemetry: 5\n", "c.yaml");
  EXPECT_FALSE(bad.is_ok());
}

}  // namespace
}  // namespace trainyard::server
