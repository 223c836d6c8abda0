#include <cstdlib>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "telemetry/gpu_sampler.h"

namespace trainyard::telemetry {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr std::string_view kH100 = "GPU-11111111-2222-3333-4444-555555555555";
constexpr std::string_view kA100 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
constexpr std::string_view kT4 = "GPU-12345678-9abc-def0-1234-56789abcdef0";
constexpr std::string_view kMig3g = "MIG-00000000-1111-2222-3333-444444444444";
constexpr std::string_view kMig1g = "MIG-55555555-6666-7777-8888-999999999999";

GpuSamplerPtr open_fake(const char* library) {
  auto sampler = make_nvml_sampler_for_test(library);
  EXPECT_TRUE(sampler.is_ok()) << sampler.status().to_string();
  return sampler.is_ok() ? std::move(sampler).value() : nullptr;
}

std::vector<GpuSample> sample_of(GpuSampler& sampler, int64_t now_ms) {
  auto samples = sampler.sample(util::from_millis(now_ms));
  EXPECT_TRUE(samples.is_ok()) << samples.status().to_string();
  return samples.is_ok() ? *samples : std::vector<GpuSample>{};
}

const GpuSample& by_uuid(const std::vector<GpuSample>& samples, std::string_view uuid) {
  for (const GpuSample& s : samples) {
    if (s.uuid == uuid) return s;
  }
  ADD_FAILURE() << "no sample of " << uuid;
  static const GpuSample kNone;
  return kNone;
}

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

TEST(NvmlSampler, ReadsEachFieldOfAGpuInItsUnit) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  auto samples = sample_of(*sampler, 1234);
  const GpuSample& h100 = by_uuid(samples, kH100);
  EXPECT_EQ(util::to_millis(h100.time), 1234);
  EXPECT_EQ(h100.index, 0);
  EXPECT_EQ(h100.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.model, "H100-80GB");
  EXPECT_EQ(h100.pci_bus_id, "00000000:18:00.0");
  EXPECT_FALSE(h100.is_mig);
  EXPECT_FALSE(h100.gpu_instance_id.has_value());
  EXPECT_EQ(h100.gpu_util_percent, 97.0);
  EXPECT_EQ(h100.mem_util_percent, 41.0);
  EXPECT_EQ(h100.memory_used_bytes, 61440 * kMiB);  // _v2: without the 512 MiB reserved
  EXPECT_EQ(h100.memory_total_bytes, 81559 * kMiB);
  EXPECT_EQ(h100.temperature_c, 71.0);  // nvmlDeviceGetTemperatureV, not the deprecated call
  EXPECT_EQ(h100.slowdown_temperature_c, 87.0);
  ASSERT_TRUE(h100.power_w.has_value());
  EXPECT_DOUBLE_EQ(*h100.power_w, 512.345);  // from 512345 mW
  EXPECT_EQ(h100.power_limit_w, 700.0);
  EXPECT_EQ(h100.sm_clock_mhz, 1980.0);
  EXPECT_EQ(h100.mem_clock_mhz, 2619.0);
  EXPECT_EQ(h100.throttle_reasons, kThrottleSwPowerCap);
  EXPECT_EQ(h100.ecc_corrected_volatile, 3u);  // volatile, not the aggregate 103
  EXPECT_EQ(h100.ecc_uncorrected_volatile, 1u);
  EXPECT_EQ(h100.pcie_tx_bytes_per_s, 1500000.0 * 1024);  // from KB/s
  EXPECT_EQ(h100.pcie_rx_bytes_per_s, 250000.0 * 1024);
  EXPECT_FALSE(h100.nvlink_tx_bytes_per_s.has_value());
  EXPECT_FALSE(h100.sm_active_percent.has_value());
}

TEST(NvmlSampler, ListsMigDevicesAfterTheirParentWithMemoryButNoUtilization) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  auto samples = sample_of(*sampler, 1000);
  ASSERT_EQ(samples.size(), 5u);
  EXPECT_EQ(samples[0].uuid, kH100);
  EXPECT_EQ(samples[1].uuid, kA100);
  EXPECT_EQ(samples[2].uuid, kMig3g);
  EXPECT_EQ(samples[3].uuid, kMig1g);
  EXPECT_EQ(samples[4].uuid, kT4);
  const GpuSample& mig = samples[2];
  EXPECT_TRUE(mig.is_mig);
  EXPECT_EQ(mig.index, 1);
  EXPECT_EQ(mig.gpu_instance_id, 1);
  EXPECT_EQ(mig.mig_profile, "3g.20gb");
  EXPECT_EQ(mig.model, "A100-40GB");
  EXPECT_EQ(mig.pci_bus_id, "00000000:3B:00.0");  // the parent's
  EXPECT_EQ(mig.memory_used_bytes, 8192 * kMiB);
  EXPECT_EQ(mig.memory_total_bytes, 19968 * kMiB);
  EXPECT_FALSE(mig.gpu_util_percent.has_value());
  EXPECT_FALSE(mig.temperature_c.has_value());
  EXPECT_FALSE(mig.power_w.has_value());
  EXPECT_FALSE(mig.throttle_reasons.has_value());
  ASSERT_EQ(mig.processes.size(), 1u);
  EXPECT_EQ(mig.processes[0].pid, 2001);
  EXPECT_FALSE(mig.processes[0].memory_bytes.has_value());  // NVML_VALUE_NOT_AVAILABLE
  EXPECT_FALSE(mig.processes[0].sm_util_percent.has_value());
  EXPECT_EQ(samples[3].mig_profile, "1g.5gb");
  EXPECT_EQ(samples[3].gpu_instance_id, 2);
  EXPECT_TRUE(samples[3].processes.empty());
}

TEST(NvmlSampler, FiltersBlankAndUnsupportedValues) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  auto samples = sample_of(*sampler, 1000);
  const GpuSample& a100 = by_uuid(samples, kA100);
  EXPECT_FALSE(a100.gpu_util_percent.has_value());  // NOT_SUPPORTED with MIG on
  EXPECT_FALSE(a100.temperature_c.has_value());     // 2^31-1
  EXPECT_EQ(a100.slowdown_temperature_c, 88.0);
  EXPECT_FALSE(a100.power_w.has_value());  // 0xFFFFFFFF mW
  EXPECT_EQ(a100.power_limit_w, 400.0);
  EXPECT_FALSE(a100.ecc_corrected_volatile.has_value());  // DCGM blank
  EXPECT_EQ(a100.ecc_uncorrected_volatile, 0u);
  EXPECT_FALSE(a100.pcie_tx_bytes_per_s.has_value());
  EXPECT_EQ(a100.memory_used_bytes, 8192 * kMiB);
  const GpuSample& t4 = by_uuid(samples, kT4);
  EXPECT_EQ(t4.gpu_util_percent, 33.0);
  EXPECT_FALSE(t4.mem_util_percent.has_value());  // 255%
  EXPECT_FALSE(t4.ecc_corrected_volatile.has_value());
  EXPECT_FALSE(t4.ecc_uncorrected_volatile.has_value());
  EXPECT_EQ(t4.memory_used_bytes, (1024 + 300) * kMiB);  // _v1 after _v2's version mismatch
  EXPECT_EQ(t4.memory_total_bytes, 15360 * kMiB);
  ASSERT_TRUE(t4.power_w.has_value());
  EXPECT_DOUBLE_EQ(*t4.power_w, 27.5);
  EXPECT_EQ(t4.throttle_reasons, kThrottleGpuIdle);
  EXPECT_EQ(t4.pcie_rx_bytes_per_s, 200.0 * 1024);
  EXPECT_TRUE(t4.processes.empty());
}

TEST(NvmlSampler, ReadsProcessesAndTheirNewestUtilizationSamples) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  auto first = by_uuid(sample_of(*sampler, 1000), kH100).processes;
  // The fake answers INSUFFICIENT_SIZE to a call without room, so this took two calls.
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].pid, 1001);
  EXPECT_EQ(first[0].memory_bytes, 40960 * kMiB);
  EXPECT_EQ(first[0].sm_util_percent, 65.0);  // the newer of its two samples
  EXPECT_EQ(first[1].pid, 1002);
  EXPECT_EQ(first[1].memory_bytes, 20480 * kMiB);
  EXPECT_FALSE(first[1].sm_util_percent.has_value());  // its only sample said 250%
  // The next call passes the newest timestamp seen, so no new samples: nothing ran.
  auto second = by_uuid(sample_of(*sampler, 2000), kH100).processes;
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].sm_util_percent, 0.0);
  EXPECT_EQ(second[1].sm_util_percent, 0.0);
}

TEST(NvmlSampler, CountsEachXidEventOnce) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  auto first = sample_of(*sampler, 1000);
  EXPECT_EQ(by_uuid(first, kH100).last_xid, 79);
  EXPECT_EQ(by_uuid(first, kH100).xid_count, 1u);
  EXPECT_EQ(by_uuid(first, kT4).xid_count, 0u);
  EXPECT_FALSE(by_uuid(first, kT4).last_xid.has_value());
  EXPECT_EQ(by_uuid(first, kMig3g).xid_count, 0u);
  auto second = sample_of(*sampler, 2000);
  EXPECT_EQ(by_uuid(second, kH100).last_xid, 79);
  EXPECT_EQ(by_uuid(second, kH100).xid_count, 1u);
}

TEST(NvmlSampler, SamplesThroughOlderEntryPointsWhenNewerOnesAreMissing) {
  auto sampler = open_fake(TY_FAKE_NVML_MINIMAL);
  ASSERT_TRUE(sampler);
  auto samples = sample_of(*sampler, 1000);
  ASSERT_EQ(samples.size(), 5u);
  const GpuSample& h100 = by_uuid(samples, kH100);
  EXPECT_EQ(h100.pci_bus_id, "00000000:18:00.0");           // _v2
  EXPECT_EQ(h100.temperature_c, 70.0);                      // nvmlDeviceGetTemperature
  EXPECT_EQ(h100.throttle_reasons, kThrottleSwPowerCap);    // ...ThrottleReasons
  EXPECT_EQ(h100.memory_used_bytes, (61440 + 512) * kMiB);  // v1 counts reserved memory
  ASSERT_EQ(h100.processes.size(), 2u);                     // base call, 16-byte infos
  EXPECT_EQ(h100.processes[1].pid, 1002);
  EXPECT_EQ(h100.processes[1].memory_bytes, 20480 * kMiB);
  EXPECT_FALSE(h100.processes[0].sm_util_percent.has_value());
  // Missing entry points leave their fields unknown.
  EXPECT_FALSE(h100.gpu_util_percent.has_value());
  EXPECT_FALSE(h100.power_w.has_value());
  EXPECT_FALSE(h100.slowdown_temperature_c.has_value());
  EXPECT_FALSE(h100.sm_clock_mhz.has_value());
  EXPECT_FALSE(h100.ecc_corrected_volatile.has_value());
  EXPECT_FALSE(h100.pcie_tx_bytes_per_s.has_value());
  EXPECT_FALSE(h100.xid_count.has_value());
  EXPECT_FALSE(h100.last_xid.has_value());
  const GpuSample& mig = by_uuid(samples, kMig3g);
  EXPECT_FALSE(mig.gpu_instance_id.has_value());
  EXPECT_EQ(mig.mig_profile, "3g.20gb");
  EXPECT_EQ(mig.memory_used_bytes, 8192 * kMiB);
}

TEST(NvmlSampler, ReadsThe32ByteProcessInfosOfDrivers535_43To535_86) {
  auto sampler = open_fake(TY_FAKE_NVML_CC);
  ASSERT_TRUE(sampler);
  auto processes = by_uuid(sample_of(*sampler, 1000), kH100).processes;
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].pid, 1001);
  EXPECT_EQ(processes[0].memory_bytes, 40960 * kMiB);
  EXPECT_EQ(processes[1].pid, 1002);
  EXPECT_EQ(processes[1].memory_bytes, 20480 * kMiB);
}

TEST(NvmlSampler, FailsASampleOnlyWhenTheGpusCannotBeListed) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  setenv("TY_FAKE_NVML_GPU_LOST", "1", 1);
  auto lost = sampler->sample(util::from_millis(1000));
  unsetenv("TY_FAKE_NVML_GPU_LOST");
  ASSERT_FALSE(lost.is_ok());
  EXPECT_EQ(lost.status().code(), util::StatusCode::Unavailable);
  EXPECT_NE(lost.status().message().find("nvmlDeviceGetCount_v2 failed: GPU is lost"),
            std::string::npos);
  EXPECT_EQ(sample_of(*sampler, 2000).size(), 5u);
}

}  // namespace
}  // namespace trainyard::telemetry
