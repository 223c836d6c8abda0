// The wrappers' GPU readings on the shared directory become samples named after the
// scheduler's slots, on their node; old readings are left out.
#include "server/batch_gpu_sampler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "exec/executor.h"
#include "telemetry/gpu_sample_json.h"

namespace trainyard::server {
namespace {

namespace fs = std::filesystem;

void write_readings(const fs::path& dir, int64_t time_ms, std::vector<int> indices) {
  fs::create_directories(dir);
  nlohmann::json samples = nlohmann::json::array();
  for (int i : indices) {
    telemetry::GpuSample s;
    s.index = i;
    s.uuid = "GPU-sim-" + std::to_string(i);
    s.gpu_util_percent = 50.0 + i;
    s.processes.push_back({.pid = 7});
    samples.push_back(telemetry::sample_to_json(s));
  }
  std::ofstream(dir / exec::kGpuSamplesFile)
      << nlohmann::json{{"node", "n2"}, {"time_ms", time_ms}, {"samples", samples}}.dump();
}

TEST(BatchGpuSampler, NamesReadingsAfterSlotsAndSkipsStaleOnes) {
  const fs::path root =
      fs::temp_directory_path() / ("ty-batch-sampler-" + std::to_string(::getpid()));
  fs::remove_all(root);
  write_readings(root / "rank-0", 10'000, {0, 1});
  write_readings(root / "rank-1", 1'000, {0});  // 9 s old
  BatchGpuSampler sampler(std::chrono::milliseconds(5000));
  sampler.set_workers(
      {{.run_dir = root / "rank-0",
        .slots = {"slurm-n2-gpu2", "slurm-n2-gpu3"},
        .slot_index = {2, 3},
        .node = "n2"},
       {.run_dir = root / "rank-1", .slots = {"slurm-n1-gpu0"}, .slot_index = {0}, .node = "n1"},
       {.run_dir = root / "missing", .slots = {"x"}, .slot_index = {0}}});
  auto samples = sampler.sample(util::from_millis(10'500));
  ASSERT_TRUE(samples.is_ok());
  ASSERT_EQ(samples->size(), 2u) << "the stale reading and the missing file are left out";
  EXPECT_EQ((*samples)[0].uuid, "slurm-n2-gpu2");
  EXPECT_EQ((*samples)[0].index, 2);
  EXPECT_EQ((*samples)[0].host, "n2");
  EXPECT_EQ((*samples)[0].gpu_util_percent, 50.0);
  EXPECT_EQ((*samples)[1].uuid, "slurm-n2-gpu3");
  EXPECT_EQ((*samples)[1].gpu_util_percent, 51.0);
  EXPECT_TRUE((*samples)[0].processes.empty()) << "another machine's pids mean nothing here";
  EXPECT_EQ(util::to_millis((*samples)[0].time), 10'500);
  fs::remove_all(root);
}

}  // namespace
}  // namespace trainyard::server
