// A GPU reading survives the trip through JSON that a wrapper on another node makes to the
// server, with "not measured" kept apart from zero.
#include "telemetry/gpu_sample_json.h"

#include <gtest/gtest.h>

namespace trainyard::telemetry {
namespace {

TEST(GpuSampleJson, RoundTripKeepsEveryFieldAndTheUnmeasured) {
  GpuSample s;
  s.time = util::from_millis(1234567);
  s.index = 3;
  s.uuid = "GPU-abc";
  s.name = "NVIDIA H100 80GB HBM3";
  s.model = "H100-80GB";
  s.pci_bus_id = "00000000:19:00.0";
  s.host = "n2";
  s.gpu_util_percent = 0.0;  // measured as zero: not the same as unmeasured
  s.memory_used_bytes = uint64_t{40} << 30;
  s.throttle_reasons = kThrottleHwThermal;
  s.last_xid = 79;
  s.processes.push_back({.pid = 42, .memory_bytes = 1024, .sm_util_percent = std::nullopt});
  auto back = sample_from_json(sample_to_json(s));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->uuid, "GPU-abc");
  EXPECT_EQ(back->host, "n2");
  EXPECT_EQ(back->index, 3);
  ASSERT_TRUE(back->gpu_util_percent.has_value());
  EXPECT_EQ(*back->gpu_util_percent, 0.0);
  EXPECT_FALSE(back->mem_util_percent.has_value());
  EXPECT_FALSE(back->temperature_c.has_value());
  EXPECT_EQ(back->memory_used_bytes, s.memory_used_bytes);
  EXPECT_EQ(back->throttle_reasons, s.throttle_reasons);
  EXPECT_EQ(back->last_xid, 79);
  ASSERT_EQ(back->processes.size(), 1u);
  EXPECT_EQ(back->processes[0].memory_bytes, 1024u);
  EXPECT_FALSE(back->processes[0].sm_util_percent.has_value());
}

TEST(GpuSampleJson, RoundTripKeepsTheDcgmDefaultFields) {
  GpuSample s;
  s.tensor_active_percent = 41.5;
  s.dram_active_percent = 30.0;
  s.gr_engine_active_percent = 0.0;
  s.memory_temperature_c = 74.0;
  s.energy_mj = uint64_t{1} << 40;  // beyond 32 bits
  s.pcie_replay_count = 2;
  s.violation_power_us = 5;
  s.violation_thermal_us = 6;
  s.violation_sync_boost_us = 7;
  s.violation_board_limit_us = 8;
  s.violation_low_util_us = 9;
  s.violation_reliability_us = 10;
  s.remapped_rows_correctable = 11;
  s.remapped_rows_uncorrectable = 12;
  s.row_remap_failed = false;
  auto back = sample_from_json(sample_to_json(s));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->tensor_active_percent, 41.5);
  EXPECT_EQ(back->dram_active_percent, 30.0);
  EXPECT_EQ(back->gr_engine_active_percent, 0.0);
  EXPECT_EQ(back->memory_temperature_c, 74.0);
  EXPECT_EQ(back->energy_mj, uint64_t{1} << 40);
  EXPECT_EQ(back->pcie_replay_count, 2u);
  EXPECT_EQ(back->violation_power_us, 5u);
  EXPECT_EQ(back->violation_thermal_us, 6u);
  EXPECT_EQ(back->violation_sync_boost_us, 7u);
  EXPECT_EQ(back->violation_board_limit_us, 8u);
  EXPECT_EQ(back->violation_low_util_us, 9u);
  EXPECT_EQ(back->violation_reliability_us, 10u);
  EXPECT_EQ(back->remapped_rows_correctable, 11u);
  EXPECT_EQ(back->remapped_rows_uncorrectable, 12u);
  EXPECT_EQ(back->row_remap_failed, false);
  EXPECT_FALSE(back->sm_active_percent.has_value());
}

TEST(GpuSampleJson, WrongTypesAreErrorsNotCrashes) {
  EXPECT_FALSE(sample_from_json(nlohmann::json::array()).is_ok());
  EXPECT_FALSE(sample_from_json(nlohmann::json{{"gpu_util", "high"}}).is_ok());
  EXPECT_FALSE(sample_from_json(nlohmann::json{{"index", "zero"}}).is_ok());
}

}  // namespace
}  // namespace trainyard::telemetry
