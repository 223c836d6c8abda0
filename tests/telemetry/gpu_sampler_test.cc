#include "telemetry/gpu_sampler.h"

#include <gtest/gtest.h>

namespace trainyard::telemetry {
namespace {

std::vector<GpuDevice> devices_of(std::string_view spec) {
  auto sampler = make_gpu_sampler(spec);
  EXPECT_TRUE(sampler.is_ok()) << sampler.status().to_string();
  if (!sampler.is_ok()) return {};
  auto devices = (*sampler)->devices();
  EXPECT_TRUE(devices.is_ok()) << devices.status().to_string();
  return devices.is_ok() ? *devices : std::vector<GpuDevice>{};
}

std::string error_of(std::string_view spec) {
  auto sampler = make_gpu_sampler(spec);
  EXPECT_FALSE(sampler.is_ok()) << spec;
  return sampler.is_ok() ? "" : sampler.status().message();
}

TEST(SyntheticSampler, MakesDevicesOfCatalogModels) {
  auto sampler = make_gpu_sampler("sim:4xH100-80GB");
  ASSERT_TRUE(sampler.is_ok());
  EXPECT_EQ((*sampler)->kind(), "synthetic");
  auto devices = devices_of("sim:4xH100-80GB");
  ASSERT_EQ(devices.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const GpuDevice& d = devices[static_cast<size_t>(i)];
    EXPECT_EQ(d.index, i);
    EXPECT_EQ(d.uuid, "GPU-sim-" + std::to_string(i) + "-H100-80GB");
    EXPECT_EQ(d.name, "Simulated H100-80GB");
    EXPECT_EQ(d.model, "H100-80GB");
    EXPECT_EQ(d.memory, model::gib(80));
    EXPECT_TRUE(d.simulated);
    EXPECT_FALSE(d.mig_enabled);
  }
}

TEST(SyntheticSampler, AcceptsListsAliasesAndMig) {
  auto devices = devices_of("sim:2xa100,1xL4,1xA100-40GB:mig");
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices[0].model, "A100-80GB");
  EXPECT_EQ(devices[1].uuid, "GPU-sim-1-A100-80GB");
  EXPECT_EQ(devices[2].model, "L4");
  EXPECT_EQ(devices[2].memory, model::gib(24));
  EXPECT_EQ(devices[3].index, 3);
  EXPECT_TRUE(devices[3].mig_enabled);
  EXPECT_TRUE(devices[3].mig_instances.empty());
  EXPECT_FALSE(devices[2].mig_enabled);
}

TEST(SyntheticSampler, ExplainsBadSpecsWithAnExample) {
  EXPECT_NE(error_of("sim:").find("no GPUs listed"), std::string::npos);
  EXPECT_NE(error_of("sim:4H100").find("expected <count>x<model>"), std::string::npos);
  EXPECT_NE(error_of("sim:0xH100").find("count must be 1..64"), std::string::npos);
  EXPECT_NE(error_of("sim:65xH100").find("count must be 1..64"), std::string::npos);
  EXPECT_NE(error_of("sim:2xH100,").find("entry ''"), std::string::npos);
  std::string unknown = error_of("sim:2xB300");
  EXPECT_NE(unknown.find("unknown GPU model 'B300'"), std::string::npos);
  EXPECT_NE(unknown.find("e.g. sim:4xH100-80GB"), std::string::npos);
  EXPECT_NE(error_of("sim:1xL4:mig").find("L4 has no MIG"), std::string::npos);
  EXPECT_NE(error_of("sim:1xH100:mog").find("only option after ':' is 'mig'"), std::string::npos);
  EXPECT_EQ(make_synthetic_sampler("4xH100").status().code(), util::StatusCode::InvalidArgument);
}

TEST(GpuSampler, NoneHasNoDevicesAndAutoFallsBackToNone) {
  auto none = make_gpu_sampler("none");
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ((*none)->kind(), "none");
  EXPECT_TRUE(devices_of("none").empty());
  auto automatic = make_gpu_sampler("auto");
  ASSERT_TRUE(automatic.is_ok());
  EXPECT_TRUE((*automatic)->kind() == "none" || (*automatic)->kind() == "nvml");
  EXPECT_NE(error_of("gpus please").find("expected auto, none, nvml"), std::string::npos);
}

}  // namespace
}  // namespace trainyard::telemetry
