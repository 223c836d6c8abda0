#include <cstdlib>

#include <gtest/gtest.h>

#include "telemetry/gpu_sampler.h"

namespace trainyard::telemetry {
namespace {

TEST(NvmlSampler, ExplainsThatNoDriverIsInstalled) {
  auto sampler = make_nvml_sampler();
  if (sampler.is_ok()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  EXPECT_EQ(sampler.status().code(), util::StatusCode::Unavailable);
  EXPECT_EQ(sampler.status().message(),
            "NVML not found (libnvidia-ml.so.1): no NVIDIA driver on this machine; use --gpus "
            "sim:4xH100-80GB to simulate GPUs");
  if (!make_gpu_sampler("nvml").is_ok()) {
    EXPECT_EQ(make_gpu_sampler("nvml").status().code(), util::StatusCode::Unavailable);
  }
}

TEST(NvmlSampler, RefusesALibraryWithoutNvmlSymbols) {
  auto missing = make_nvml_sampler_for_test("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("NVML not found (/nonexistent/libnvidia-ml.so.1)"),
            std::string::npos);
  auto not_nvml = make_nvml_sampler_for_test("libc.so.6");
  ASSERT_FALSE(not_nvml.is_ok());
  EXPECT_NE(not_nvml.status().message().find("lacks nvmlInit_v2"), std::string::npos);
}

TEST(NvmlSampler, ReportsWhenTheDriverFailsToInitialize) {
  setenv("TY_FAKE_NVML_INIT_ERROR", "1", 1);
  auto sampler = make_nvml_sampler_for_test(TY_FAKE_NVML);
  unsetenv("TY_FAKE_NVML_INIT_ERROR");
  ASSERT_FALSE(sampler.is_ok());
  EXPECT_EQ(sampler.status().code(), util::StatusCode::Unavailable);
  EXPECT_NE(sampler.status().message().find("Driver Not Loaded"), std::string::npos);
}

TEST(NvmlSampler, ListsDevicesAndMigInstancesOfTheDriver) {
  auto sampler = make_nvml_sampler_for_test(TY_FAKE_NVML);
  ASSERT_TRUE(sampler.is_ok()) << sampler.status().to_string();
  EXPECT_EQ((*sampler)->kind(), "nvml");
  auto devices = (*sampler)->devices();
  ASSERT_TRUE(devices.is_ok()) << devices.status().to_string();
  ASSERT_EQ(devices->size(), 3u);
  const GpuDevice& h100 = (*devices)[0];
  EXPECT_EQ(h100.index, 0);
  EXPECT_EQ(h100.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.model, "H100-80GB");
  EXPECT_EQ(h100.uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(h100.memory, model::mib(81559));
  EXPECT_FALSE(h100.mig_enabled);
  EXPECT_FALSE(h100.simulated);
  const GpuDevice& a100 = (*devices)[1];
  EXPECT_EQ(a100.model, "A100-40GB");
  ASSERT_TRUE(a100.mig_enabled);
  ASSERT_EQ(a100.mig_instances.size(), 2u);
  EXPECT_EQ(a100.mig_instances[0].uuid, "MIG-00000000-1111-2222-3333-444444444444");
  EXPECT_EQ(a100.mig_instances[0].profile, "3g.20gb");
  EXPECT_EQ(a100.mig_instances[0].start, 4);
  EXPECT_EQ(a100.mig_instances[1].profile, "1g.5gb");  // from its memory: the name has none
  EXPECT_EQ(a100.mig_instances[1].start, 0);
  EXPECT_EQ((*devices)[2].model, "T4");
  EXPECT_FALSE((*devices)[2].mig_enabled);
}

}  // namespace
}  // namespace trainyard::telemetry
