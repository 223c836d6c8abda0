// A GPU reading survives the trip through JSON that a wrapper on another node makes to the
// server, with "not measured" kept apart from zero.
#include "telemetry/gpu_sample_json.h"

#include <gtest/gtest.h>

namespace trainyard::telemetry {
namespace {

TEST(GpuSampleJson, RoundTripKeepsEveryFieldAndTheUnmeasured) {
  GpuSample s;
  s.time_ms = 1234567;
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

TEST(GpuSampleJson, WrongTypesAreErrorsNotCrashes) {
  EXPECT_FALSE(sample_from_json(nlohmann::json::array()).is_ok());
  EXPECT_FALSE(sample_from_json(nlohmann::json{{"gpu_util", "high"}}).is_ok());
  EXPECT_FALSE(sample_from_json(nlohmann::json{{"index", "zero"}}).is_ok());
}

}  // namespace
}  // namespace trainyard::telemetry
