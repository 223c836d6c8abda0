// The NVML sampler's readings of dcgm-exporter's default fields beyond the basic ones (energy,
// PCIe replays, violation times, remapped rows, memory temperature, NVLink throughput, GPM
// activity), through the fake NVML (fake_nvml_fields.cc): present, absent, and filtered.
#include <dlfcn.h>

#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "telemetry/gpu_sampler.h"

namespace trainyard::telemetry {
namespace {

constexpr std::string_view kH100 = "GPU-11111111-2222-3333-4444-555555555555";
constexpr std::string_view kA100 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
constexpr std::string_view kT4 = "GPU-12345678-9abc-def0-1234-56789abcdef0";
constexpr std::string_view kMig3g = "MIG-00000000-1111-2222-3333-444444444444";

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

GpuSample by_uuid(const std::vector<GpuSample>& samples, std::string_view uuid) {
  for (const GpuSample& s : samples) {
    if (s.uuid == uuid) return s;
  }
  ADD_FAILURE() << "no sample of " << uuid;
  return {};
}

// The fake's call counter (ty_fake_nvml_calls), from the copy the sampler loaded.
using CallCount = unsigned long long (*)(const char*);
CallCount calls_of(const char* library) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << library;
  auto fn = handle ? reinterpret_cast<CallCount>(dlsym(handle, "ty_fake_nvml_calls")) : nullptr;
  EXPECT_NE(fn, nullptr);
  if (handle) dlclose(handle);  // the sampler still holds it
  return fn;
}

bool has_any_new_field(const GpuSample& s) {
  return s.energy_mj || s.pcie_replay_count || s.violation_power_us || s.violation_thermal_us ||
         s.violation_sync_boost_us || s.violation_board_limit_us || s.violation_low_util_us ||
         s.violation_reliability_us || s.remapped_rows_correctable ||
         s.remapped_rows_uncorrectable || s.row_remap_failed || s.memory_temperature_c ||
         s.nvlink_tx_bytes_per_s || s.nvlink_rx_bytes_per_s || s.tensor_active_percent ||
         s.dram_active_percent || s.gr_engine_active_percent || s.sm_active_percent;
}

TEST(NvmlSamplerFields, ReadsCountersAndHealthFieldsInDcgmUnits) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  auto samples = sample_of(*sampler, 1000);
  const GpuSample h100 = by_uuid(samples, kH100);
  EXPECT_EQ(h100.energy_mj, 123456789u);
  EXPECT_EQ(h100.pcie_replay_count, 4u);
  // NVML reports nanoseconds; DCGM's violation fields are microseconds (7 ns rounds away).
  EXPECT_EQ(h100.violation_power_us, 1000u);
  EXPECT_EQ(h100.violation_thermal_us, 2000u);
  EXPECT_EQ(h100.violation_sync_boost_us, 3000u);
  EXPECT_EQ(h100.violation_board_limit_us, 4000u);
  EXPECT_EQ(h100.violation_low_util_us, 5000u);
  EXPECT_EQ(h100.violation_reliability_us, 6000u);
  EXPECT_EQ(h100.remapped_rows_correctable, 2u);
  EXPECT_EQ(h100.remapped_rows_uncorrectable, 1u);
  EXPECT_EQ(h100.row_remap_failed, false);
  EXPECT_EQ(h100.memory_temperature_c, 78.0);

  const GpuSample a100 = by_uuid(samples, kA100);
  EXPECT_EQ(a100.row_remap_failed, true);
  EXPECT_EQ(a100.remapped_rows_uncorrectable, 0u);
  EXPECT_EQ(a100.pcie_replay_count, 0u);
  EXPECT_FALSE(a100.energy_mj.has_value());
  EXPECT_FALSE(a100.violation_power_us.has_value());
  EXPECT_FALSE(a100.memory_temperature_c.has_value());

  const GpuSample t4 = by_uuid(samples, kT4);
  EXPECT_EQ(t4.energy_mj, 5000u);
  EXPECT_EQ(t4.violation_power_us, 1000u);
  EXPECT_FALSE(t4.violation_thermal_us.has_value());
  EXPECT_FALSE(t4.pcie_replay_count.has_value());
  EXPECT_FALSE(t4.remapped_rows_correctable.has_value());
  EXPECT_FALSE(t4.memory_temperature_c.has_value());  // 0: no sensor

  EXPECT_FALSE(has_any_new_field(by_uuid(samples, kMig3g)));  // NVML reports them on the parent
}

TEST(NvmlSamplerFields, ReadsGpmActivityBetweenTwoSamplesAtLeast100MsApart) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  EXPECT_FALSE(by_uuid(sample_of(*sampler, 1000), kH100).tensor_active_percent.has_value());
  EXPECT_FALSE(by_uuid(sample_of(*sampler, 1050), kH100).tensor_active_percent.has_value());
  auto samples = sample_of(*sampler, 2000);
  const GpuSample h100 = by_uuid(samples, kH100);
  EXPECT_EQ(h100.tensor_active_percent, 43.5);
  EXPECT_EQ(h100.sm_active_percent, 71.25);
  EXPECT_EQ(h100.gr_engine_active_percent, 88.5);
  EXPECT_EQ(h100.dram_active_percent, 37.75);
  // The A100 says it has no GPM; the T4 fails every GPM call.
  EXPECT_FALSE(by_uuid(samples, kA100).tensor_active_percent.has_value());
  EXPECT_FALSE(by_uuid(samples, kT4).tensor_active_percent.has_value());
  EXPECT_FALSE(by_uuid(samples, kT4).sm_active_percent.has_value());
  // And keeps reporting on later samples (the two buffers alternate).
  EXPECT_EQ(by_uuid(sample_of(*sampler, 3000), kH100).tensor_active_percent, 43.5);
}

TEST(NvmlSamplerFields, NvlinkThroughputIsTheChangeOfItsByteCounters) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  EXPECT_FALSE(by_uuid(sample_of(*sampler, 1000), kH100).nvlink_tx_bytes_per_s.has_value());
  auto samples = sample_of(*sampler, 3000);
  const GpuSample h100 = by_uuid(samples, kH100);
  // The fake's counters grow 4096 KiB (tx) and 2048 KiB (rx) per read; two seconds apart.
  EXPECT_EQ(h100.nvlink_tx_bytes_per_s, 4096.0 * 1024 / 2);
  EXPECT_EQ(h100.nvlink_rx_bytes_per_s, 2048.0 * 1024 / 2);
  EXPECT_FALSE(by_uuid(samples, kA100).nvlink_tx_bytes_per_s.has_value());
  EXPECT_FALSE(by_uuid(samples, kT4).nvlink_rx_bytes_per_s.has_value());
}

TEST(NvmlSamplerFields, PcieThroughputIsTheChangeOfItsByteCountersWhereTheDriverHasThem) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  EXPECT_FALSE(by_uuid(sample_of(*sampler, 1000), kA100).pcie_tx_bytes_per_s.has_value());
  auto samples = sample_of(*sampler, 3000);
  // The A100's counters grow 3 MB (tx) and 1 MB (rx) per read; it has no PcieThroughput.
  EXPECT_EQ(by_uuid(samples, kA100).pcie_tx_bytes_per_s, 3e6 / 2);
  EXPECT_EQ(by_uuid(samples, kA100).pcie_rx_bytes_per_s, 1e6 / 2);
  // Without counters, the 20 ms throughput call (KB/s).
  EXPECT_EQ(by_uuid(samples, kH100).pcie_tx_bytes_per_s, 1500000.0 * 1024);
}

TEST(NvmlSamplerFields, CostlyCountersAreReadEveryTenSecondsAndHeldBetween) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  CallCount calls = calls_of(TY_FAKE_NVML);
  ASSERT_NE(calls, nullptr);
  const char* costly[] = {"nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetViolationStatus",
                          "nvmlDeviceGetPcieThroughput"};
  std::vector<unsigned long long> before;
  for (const char* name : costly) before.push_back(calls(name));
  sample_of(*sampler, 1000);
  std::vector<unsigned long long> first;
  for (const char* name : costly) first.push_back(calls(name));
  for (size_t i = 0; i < first.size(); ++i) EXPECT_GT(first[i], before[i]) << costly[i];
  // Nine more samples within ten seconds: no costly call, the first values held.
  for (int64_t t = 2000; t <= 10000; t += 1000) {
    auto samples = sample_of(*sampler, t);
    EXPECT_EQ(by_uuid(samples, kH100).energy_mj, 123456789u) << t;
    EXPECT_EQ(by_uuid(samples, kH100).violation_reliability_us, 6000u) << t;
    EXPECT_EQ(by_uuid(samples, kH100).pcie_rx_bytes_per_s, 250000.0 * 1024) << t;
    EXPECT_EQ(by_uuid(samples, kT4).energy_mj, 5000u) << t;
  }
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(calls(costly[i]), first[i]) << costly[i];
  // Ten seconds after the first: read again, as many calls as the first time.
  EXPECT_EQ(by_uuid(sample_of(*sampler, 11000), kH100).energy_mj, 123456789u);
  for (size_t i = 0; i < first.size(); ++i)
    EXPECT_EQ(calls(costly[i]) - first[i], first[i] - before[i]) << costly[i];
}

TEST(NvmlSamplerFields, ProcessUtilizationIsAskedOnlyOfGpusWithProcesses) {
  auto sampler = open_fake(TY_FAKE_NVML);
  ASSERT_TRUE(sampler);
  CallCount calls = calls_of(TY_FAKE_NVML);
  ASSERT_NE(calls, nullptr);
  const auto before = calls("nvmlDeviceGetProcessUtilization");
  auto samples = sample_of(*sampler, 1000);
  // Of the three GPUs only the H100 runs processes (the A100's are on its MIG devices): its two
  // calls (how many samples, then the samples). Asking all three made four.
  EXPECT_EQ(calls("nvmlDeviceGetProcessUtilization") - before, 2u);
  EXPECT_EQ(by_uuid(samples, kH100).processes.at(0).sm_util_percent, 65.0);
  EXPECT_TRUE(by_uuid(samples, kT4).processes.empty());
}

TEST(NvmlSamplerFields, AnOlderDriverWithoutTheEntryPointsReportsNoneOfThem) {
  auto sampler = open_fake(TY_FAKE_NVML_MINIMAL);
  ASSERT_TRUE(sampler);
  sample_of(*sampler, 1000);
  for (const GpuSample& s : sample_of(*sampler, 3000)) {
    EXPECT_FALSE(has_any_new_field(s)) << s.uuid;
  }
}

}  // namespace
}  // namespace trainyard::telemetry
