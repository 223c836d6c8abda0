// The control plane's telemetry end to end in one process: placements reach the recorder, loads
// reach the synthetic sampler, and the API views, the job's samples and /metrics agree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "fake_executor.h"
#include "server/control_plane.h"

namespace trainyard::server {
namespace {

// Two simulated H100s reading 50% utilization and 10 GiB used while a load is set.
class LoadSampler final : public telemetry::GpuSampler {
 public:
  util::Result<std::vector<telemetry::GpuDevice>> devices() override {
    std::vector<telemetry::GpuDevice> out;
    for (int i = 0; i < 2; ++i)
      out.push_back({.index = i,
                     .uuid = "GPU-sim-" + std::to_string(i),
                     .name = "Simulated H100-80GB",
                     .model = "H100-80GB",
                     .memory = model::Bytes(int64_t{80} << 30),
                     .simulated = true});
    return out;
  }
  util::Result<std::vector<telemetry::GpuSample>> sample(util::Time now) override {
    std::lock_guard lock(mu_);
    std::vector<telemetry::GpuSample> out;
    for (int i = 0; i < 2; ++i) {
      telemetry::GpuSample s{.time = now, .index = i, .uuid = "GPU-sim-" + std::to_string(i)};
      s.memory_total_bytes = uint64_t{80} << 30;
      const bool busy = loads.contains(s.uuid);
      s.gpu_util_percent = busy ? 50.0 : 0.0;
      s.memory_used_bytes = busy ? uint64_t{10} << 30 : 0;
      out.push_back(std::move(s));
    }
    return out;
  }
  void set_synthetic_load(const std::string& uuid,
                          std::optional<telemetry::SyntheticLoad> load) override {
    std::lock_guard lock(mu_);
    if (load) {
      loads[uuid] = *load;
    } else {
      loads.erase(uuid);
    }
  }
  std::string_view kind() const override { return "synthetic"; }

  std::mutex mu_;
  std::map<std::string, telemetry::SyntheticLoad> loads;
};

class ControlPlaneTelemetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ty-cpt-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto p = ControlPlane::open({.state_dir = dir_}, sampler_, exec_, clock_);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    plane_ = std::move(*p);
  }
  void TearDown() override {
    plane_.reset();
    std::filesystem::remove_all(dir_);
  }
  int64_t now_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now().time_since_epoch())
        .count();
  }
  void cycle(double seconds = 1) {
    clock_.advance_to(clock_.now() + util::seconds_f(seconds));
    ASSERT_TRUE(plane_->reconcile_once().is_ok());
  }
  void record(double seconds = 1) {
    clock_.advance_to(clock_.now() + util::seconds_f(seconds));
    ASSERT_TRUE(plane_->telemetry_recorder()->record_once(util::from_millis(now_ms())).is_ok());
  }

  std::filesystem::path dir_;
  util::VirtualClock clock_{util::kEpoch + util::seconds(1'800'000'000)};
  LoadSampler sampler_;
  FakeExecutor exec_;
  std::unique_ptr<ControlPlane> plane_;
  Principal admin_{.admin = true, .name = "test"};
};

TEST_F(ControlPlaneTelemetryTest, RunningJobIsSeenOnItsGpuInEveryView) {
  auto submitted = plane_->submit(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata:\n  name: hot\n  labels: "
      "{trainyard.dev/sim-gpu-profile: overheating}\nspec:\n  team: vision\n  template:\n    "
      "command: [train]\n    resources: {limits: {nvidia.com/gpu: 1}}\n",
      "job.yaml", admin_);
  ASSERT_TRUE(submitted.is_ok()) << submitted.status().to_string();
  const int64_t id = (*submitted)["id"].get<int64_t>();
  cycle();
  ASSERT_EQ(exec_.launches.size(), 1u);
  const std::string device = exec_.launches[0].visible_devices.at(0);

  // The sampler was told what runs on the job's GPU, from the job's profile label.
  ASSERT_TRUE(sampler_.loads.contains(device));
  EXPECT_EQ(sampler_.loads[device].profile, "overheating");
  EXPECT_EQ(sampler_.loads[device].job_id, std::to_string(id));
  EXPECT_EQ(sampler_.loads[device].pids, std::vector<int>{1000});

  record();
  const auto gpus = plane_->gpus(admin_);
  ASSERT_EQ(gpus["items"].size(), 2u);
  for (const auto& d : gpus["items"]) {
    const bool mine = d["uuid"] == device;
    ASSERT_EQ(d["jobs"].size(), mine ? 1u : 0u) << d.dump();
    if (mine) {
      EXPECT_EQ(d["jobs"][0]["id"], id);
      EXPECT_EQ(d["jobs"][0]["team"], "vision");
      EXPECT_EQ(d["gpuUtilPercent"], 50.0);
    }
  }
  const std::string metrics = plane_->metrics_text();
  EXPECT_NE(metrics.find("UUID=\"" + device + "\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("hpc_job=\"" + std::to_string(id) + "\",team=\"vision\"} 50\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("trainyard_jobs{state=\"running\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("trainyard_gpu_allocated{node="), std::string::npos);
  EXPECT_NE(metrics.find("trainyard_queue_wait_seconds_count 1\n"), std::string::npos);

  // Two minutes of samples: the first is stored, the rest is still in memory.
  for (int s = 0; s < 120; ++s) record();
  auto samples = plane_->job_samples(util::JobId(id));
  ASSERT_TRUE(samples.is_ok()) << samples.status().to_string();
  ASSERT_GE(samples->size(), 2u);
  EXPECT_EQ(samples->front().uuid, device);
  EXPECT_EQ(samples->front().index, exec_.launches[0].visible_devices[0] == "GPU-sim-0" ? 0 : 1);
  EXPECT_DOUBLE_EQ(*samples->front().gpu_util_percent, 50.0);
  for (size_t i = 1; i < samples->size(); ++i)
    EXPECT_LE((*samples)[i - 1].time, (*samples)[i].time);
  auto telemetry = plane_->job_telemetry(util::JobId(id), 5, admin_);
  ASSERT_TRUE(telemetry.is_ok());
  EXPECT_GE((*telemetry)["minutes"].size(), 1u);
  EXPECT_EQ((*telemetry)["samples"].size(), 5u);
  EXPECT_EQ((*telemetry)["summary"]["gpuUtilAvg"], 50.0);
  EXPECT_EQ((*telemetry)["summary"]["memoryUsedMaxBytes"], static_cast<double>(uint64_t{10} << 30));
  EXPECT_EQ((*telemetry)["summary"]["samples"], 121);
  const auto shown = *plane_->get_job(util::JobId(id), admin_);
  EXPECT_EQ(shown["utilization"]["gpuUtilP95"], 50.0);

  Principal other{.admin = false, .team = "nlp", .name = "n"};
  EXPECT_EQ(plane_->job_telemetry(util::JobId(id), 5, other).status().code(),
            util::StatusCode::PermissionDenied);
  EXPECT_EQ(plane_->job_samples(util::JobId(999)).status().code(), util::StatusCode::NotFound);

  // The attempt ends: the load is cleared and the GPU is nobody's again.
  exec_.exit(1000, 0);
  cycle();
  EXPECT_FALSE(sampler_.loads.contains(device));
  record();
  const nlohmann::json after = plane_->gpus(admin_);  // range-for over a temporary's member
  for (const auto& d : after["items"]) EXPECT_TRUE(d["jobs"].empty());
}

}  // namespace
}  // namespace trainyard::server
