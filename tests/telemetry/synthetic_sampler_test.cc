// The synthetic sampler's curves: each profile's shape, determinism, and loads that come and go.
#include <algorithm>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "telemetry/gpu_sampler.h"
#include "telemetry/synthetic_curves.h"

namespace trainyard::telemetry {
namespace {

constexpr int64_t kStartMs = 1'700'000'000'000;  // a job's start, on the Unix epoch
constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr const char* kGpu0 = "GPU-sim-0-H100-80GB";

GpuSamplerPtr sim(std::string_view spec) {
  auto sampler = make_synthetic_sampler(spec);
  EXPECT_TRUE(sampler.is_ok()) << sampler.status().to_string();
  return sampler.is_ok() ? std::move(sampler).value() : nullptr;
}

SyntheticLoad job(std::string profile, std::vector<int> pids = {}) {
  return {.job_id = "job-1",
          .profile = std::move(profile),
          .start = util::from_millis(kStartMs),
          .pids = pids};
}

GpuSample one(GpuSampler& sampler, int64_t now_ms, size_t gpu = 0) {
  auto samples = sampler.sample(util::from_millis(now_ms));
  if (!samples.is_ok() || samples->size() <= gpu) {
    ADD_FAILURE() << "no sample of GPU " << gpu;
    return {};
  }
  return (*samples)[gpu];
}

// Readings of GPU 0 from `from_ms` to `to_ms` (both after the job's start) every `step_ms`.
std::vector<GpuSample> series(GpuSampler& sampler, int64_t from_ms, int64_t to_ms,
                              int64_t step_ms) {
  std::vector<GpuSample> out;
  for (int64_t t = from_ms; t <= to_ms; t += step_ms) out.push_back(one(sampler, kStartMs + t));
  return out;
}

double memory_share(const GpuSample& s) {
  return static_cast<double>(s.memory_used_bytes.value_or(0)) /
         static_cast<double>(s.memory_total_bytes.value_or(1));
}

double mean_util(const std::vector<GpuSample>& samples) {
  double sum = 0;
  for (const auto& s : samples) sum += s.gpu_util_percent.value_or(-1000);
  return sum / static_cast<double>(samples.size());
}

template <typename T>
std::string opt(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : "-";
}

// Every field, so two samples compare equal only if they are identical.
std::string describe(const GpuSample& s) {
  std::string out = fmt::format(
      "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
      util::to_millis(s.time), s.index, s.uuid, s.name, s.model, s.pci_bus_id, s.is_mig,
      opt(s.gpu_instance_id), s.mig_profile, opt(s.gpu_util_percent), opt(s.mem_util_percent),
      opt(s.sm_active_percent), opt(s.memory_used_bytes), opt(s.memory_total_bytes),
      opt(s.temperature_c), opt(s.slowdown_temperature_c), opt(s.power_w), opt(s.power_limit_w),
      opt(s.sm_clock_mhz), opt(s.mem_clock_mhz), opt(s.throttle_reasons),
      opt(s.ecc_corrected_volatile), opt(s.ecc_uncorrected_volatile), opt(s.last_xid),
      opt(s.xid_count), opt(s.pcie_tx_bytes_per_s), opt(s.pcie_rx_bytes_per_s),
      opt(s.nvlink_tx_bytes_per_s));
  for (const auto& p : s.processes) {
    out += fmt::format(" [{} {} {}]", p.pid, opt(p.memory_bytes), opt(p.sm_util_percent));
  }
  return out;
}

TEST(SyntheticSampler, AGpuWithoutLoadIsIdle) {
  auto sampler = sim("sim:2xH100-80GB");
  ASSERT_TRUE(sampler);
  auto samples = sampler->sample(util::from_millis(kStartMs));
  ASSERT_TRUE(samples.is_ok());
  ASSERT_EQ(samples->size(), 2u);
  const GpuSample& s = (*samples)[1];
  EXPECT_EQ(util::to_millis(s.time), kStartMs);
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.uuid, "GPU-sim-1-H100-80GB");
  EXPECT_EQ(s.model, "H100-80GB");
  EXPECT_EQ(s.pci_bus_id, "00000000:01:00.0");
  EXPECT_EQ(s.gpu_util_percent, 0.0);
  EXPECT_EQ(s.memory_used_bytes, 0u);
  EXPECT_EQ(s.memory_total_bytes, 80ull << 30);
  ASSERT_TRUE(s.temperature_c.has_value());
  EXPECT_NEAR(*s.temperature_c, 35, 1);
  ASSERT_TRUE(s.power_w.has_value());
  EXPECT_LT(*s.power_w, 0.15 * 700);
  EXPECT_EQ(s.power_limit_w, 700.0);
  EXPECT_EQ(s.slowdown_temperature_c, 87.0);
  EXPECT_EQ(s.throttle_reasons, kThrottleGpuIdle);
  EXPECT_EQ(s.ecc_corrected_volatile, 0u);
  EXPECT_EQ(s.ecc_uncorrected_volatile, 0u);
  EXPECT_EQ(s.xid_count, 0u);
  EXPECT_TRUE(s.processes.empty());
  EXPECT_TRUE(s.sm_clock_mhz.has_value());
}

TEST(SyntheticSampler, PowerLimitFollowsTheModel) {
  auto sampler = sim("sim:1xH100-80GB,1xA100-80GB,1xL4,1xT4");
  ASSERT_TRUE(sampler);
  auto samples = sampler->sample(util::from_millis(kStartMs));
  ASSERT_TRUE(samples.is_ok());
  ASSERT_EQ(samples->size(), 4u);
  EXPECT_EQ((*samples)[0].power_limit_w, 700.0);
  EXPECT_EQ((*samples)[1].power_limit_w, 400.0);
  EXPECT_EQ((*samples)[2].power_limit_w, 72.0);
  EXPECT_EQ((*samples)[3].power_limit_w, 70.0);
  EXPECT_EQ(synthetic_model_spec("B300-288GB").tdp_w, 300);  // not in the table
}

TEST(SyntheticSampler, HealthyKeepsTheGpuBusyAndNeverThrottles) {
  auto sampler = sim("sim:1xH100-80GB");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load(kGpu0, job("healthy"));
  auto samples = series(*sampler, 0, 40 * kMinute, 10 * kSecond);
  for (const GpuSample& s : samples) {
    EXPECT_EQ(s.throttle_reasons, 0u) << util::to_millis(s.time);
    EXPECT_GE(s.gpu_util_percent.value_or(0), 90);
    EXPECT_LE(s.gpu_util_percent.value_or(1000), 98);
    EXPECT_GE(memory_share(s), 0.70);
    EXPECT_LE(memory_share(s), 0.85);
    EXPECT_GE(s.power_w.value_or(0), 0.75 * 700);
    EXPECT_LE(s.power_w.value_or(1e9), 0.90 * 700);
    if (util::to_millis(s.time) - kStartMs >= 10 * kMinute) {  // warmed up
      EXPECT_GE(s.temperature_c.value_or(0), 65);
      EXPECT_LE(s.temperature_c.value_or(1000), 72);
    }
  }
  // Not the leak shape: memory over the last 10 minutes is where it was in the first minute.
  double first = memory_share(samples.front());
  double last = memory_share(samples.back());
  EXPECT_NEAR(first, last, 0.01);
}

TEST(SyntheticSampler, DataBoundComputesInShortBurstsWithMemoryHeld) {
  auto sampler = sim("sim:1xH100-80GB");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load(kGpu0, job("data-bound"));
  auto samples = series(*sampler, 0, 10 * kMinute, kSecond);
  double mean = mean_util(samples);
  EXPECT_GT(mean, 20);
  EXPECT_LT(mean, 35);
  auto [low, high] = std::minmax_element(samples.begin(), samples.end(), [](auto& a, auto& b) {
    return a.gpu_util_percent < b.gpu_util_percent;
  });
  EXPECT_LT(low->gpu_util_percent.value_or(100), 5);  // waiting on data
  EXPECT_GT(high->gpu_util_percent.value_or(0), 85);  // a burst
  for (const GpuSample& s : samples) EXPECT_GT(memory_share(s), 0.6);
}

TEST(SyntheticSampler, MemoryLeakGrowsSteadilyWhileUtilizationStaysHealthy) {
  auto sampler = sim("sim:1xH100-80GB");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load(kGpu0, job("memory-leak"));
  auto samples = series(*sampler, 0, 20 * kMinute, 5 * kSecond);
  EXPECT_NEAR(memory_share(samples.front()), 0.30, 0.01);
  for (size_t i = 1; i < samples.size(); ++i) {
    EXPECT_GT(samples[i].memory_used_bytes, samples[i - 1].memory_used_bytes) << i;
    EXPECT_GE(samples[i].gpu_util_percent.value_or(0), 90);
  }
  EXPECT_GT(memory_share(samples.back()), 0.70);
  EXPECT_GE(memory_share(one(*sampler, kStartMs + 30 * kMinute)), 0.94);
  EXPECT_LE(memory_share(one(*sampler, kStartMs + 60 * kMinute)), 0.96);
}

TEST(SyntheticSampler, OverheatingCrossesTheSlowdownThresholdAndThrottlesAfterSomeMinutes) {
  auto sampler = sim("sim:1xH100-80GB");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load(kGpu0, job("overheating"));
  auto samples = series(*sampler, 0, 20 * kMinute, 10 * kSecond);
  std::optional<int64_t> throttled_at;
  for (const GpuSample& s : samples) {
    if (!throttled_at && (*s.throttle_reasons & kThrottleHwThermal))
      throttled_at = util::to_millis(s.time);
  }
  ASSERT_TRUE(throttled_at.has_value());
  EXPECT_GE(*throttled_at - kStartMs, 3 * kMinute);
  EXPECT_LE(*throttled_at - kStartMs, 12 * kMinute);
  GpuSample cool = one(*sampler, kStartMs + kMinute);
  GpuSample hot = one(*sampler, kStartMs + 20 * kMinute);
  EXPECT_EQ(*cool.throttle_reasons & kThrottleThermalOrPower, 0u);
  EXPECT_NE(*hot.throttle_reasons & kThrottleHwThermal, 0u);
  EXPECT_GT(hot.temperature_c.value_or(0), *hot.slowdown_temperature_c);
  EXPECT_LT(hot.sm_clock_mhz.value_or(1e9), 0.8 * cool.sm_clock_mhz.value_or(0));
}

TEST(SyntheticSampler, UnderfilledUsesLittleMemoryAndCompute) {
  auto sampler = sim("sim:1xA100-80GB");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load("GPU-sim-0-A100-80GB", job("underfilled"));
  for (const GpuSample& s : series(*sampler, 0, 5 * kMinute, 7 * kSecond)) {
    EXPECT_GE(memory_share(s), 0.10);
    EXPECT_LE(memory_share(s), 0.15);
    EXPECT_GE(s.gpu_util_percent.value_or(0), 30);
    EXPECT_LE(s.gpu_util_percent.value_or(100), 45);
    EXPECT_FALSE(s.sm_active_percent.has_value());  // no GPM before Hopper
  }
}

TEST(SyntheticSampler, TensorActivityFollowsSmActivityAndTheJobsPrecision) {
  auto sampler = sim("sim:3xH100-80GB");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load(kGpu0, job("healthy"));
  sampler->set_synthetic_load("GPU-sim-1-H100-80GB", job("fp32"));
  SyntheticLoad reports_fp32 = job("overheating");  // the dtype its step metrics report
  reports_fp32.dtype = "float32";
  sampler->set_synthetic_load("GPU-sim-2-H100-80GB", reports_fp32);
  for (int64_t t = 0; t <= 5 * kMinute; t += 13 * kSecond) {
    auto samples = sampler->sample(util::from_millis(kStartMs + t));
    ASSERT_TRUE(samples.is_ok());
    const GpuSample& mixed = (*samples)[0];
    const GpuSample& fp32 = (*samples)[1];
    ASSERT_TRUE(mixed.tensor_active_percent && mixed.sm_active_percent);
    EXPECT_GE(*mixed.tensor_active_percent, 0.5 * *mixed.sm_active_percent);
    EXPECT_LE(*mixed.tensor_active_percent, 0.7 * *mixed.sm_active_percent);
    EXPECT_EQ(mixed.gr_engine_active_percent, mixed.gpu_util_percent);
    EXPECT_GT(mixed.dram_active_percent.value_or(0), 25);
    EXPECT_GE(fp32.gpu_util_percent.value_or(0), 90);        // as busy...
    EXPECT_LT(fp32.tensor_active_percent.value_or(100), 1);  // ...without tensor cores
    EXPECT_LT((*samples)[2].tensor_active_percent.value_or(100), 1);
  }
  auto a100 = sim("sim:1xA100-80GB");
  ASSERT_TRUE(a100);
  a100->set_synthetic_load("GPU-sim-0-A100-80GB", job("healthy"));
  EXPECT_FALSE(one(*a100, kStartMs).tensor_active_percent.has_value());  // no GPM before Hopper
}

TEST(SyntheticSampler, EnergyIntegratesPowerAndViolationsAddUpThrottledTime) {
  auto sampler = sim("sim:1xH100-80GB,1xT4");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load(kGpu0, job("overheating"));
  std::vector<GpuSample> h100, t4;
  for (int64_t t = 0; t <= 20 * kMinute; t += 10 * kSecond) {
    auto samples = sampler->sample(util::from_millis(kStartMs + t));
    ASSERT_TRUE(samples.is_ok());
    h100.push_back((*samples)[0]);
    t4.push_back((*samples)[1]);
  }
  EXPECT_EQ(h100.front().energy_mj, 0u);  // counts from the sampler's start
  for (size_t i = 1; i < h100.size(); ++i) {
    const GpuSample& a = h100[i - 1];
    const GpuSample& b = h100[i];
    const double watts = (*a.power_w + *b.power_w) / 2;
    EXPECT_NEAR(static_cast<double>(*b.energy_mj - *a.energy_mj), watts * 10'000, 1) << i;
    const bool hot = (*a.throttle_reasons & (kThrottleSwThermal | kThrottleHwThermal)) != 0;
    EXPECT_EQ(*b.violation_thermal_us - *a.violation_thermal_us, hot ? 10'000'000u : 0u) << i;
    // The idle T4 runs at idle clocks the whole time.
    EXPECT_EQ(*t4[i].violation_low_util_us - *t4[i - 1].violation_low_util_us, 10'000'000u);
  }
  EXPECT_GT(h100.back().violation_thermal_us.value_or(0), 0u);
  EXPECT_EQ(h100.back().violation_power_us, 0u);
  EXPECT_EQ(h100.back().violation_reliability_us, 0u);
  // Going back in time adds nothing.
  EXPECT_EQ(one(*sampler, kStartMs).energy_mj, h100.back().energy_mj);
}

TEST(SyntheticSampler, DcgmHealthFieldsDependOnTheModel) {
  auto sampler = sim("sim:1xH100-80GB,1xT4");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load(kGpu0, job("healthy"));
  auto samples = sampler->sample(util::from_millis(kStartMs + 5 * kMinute));
  ASSERT_TRUE(samples.is_ok());
  const GpuSample& h100 = (*samples)[0];
  const GpuSample& t4 = (*samples)[1];
  EXPECT_GT(h100.memory_temperature_c.value_or(0), *h100.temperature_c);  // HBM
  EXPECT_EQ(h100.remapped_rows_uncorrectable, 0u);
  EXPECT_EQ(h100.row_remap_failed, false);
  EXPECT_GT(h100.nvlink_tx_bytes_per_s.value_or(0), 1e9);
  EXPECT_EQ(h100.pcie_replay_count, 0u);
  EXPECT_FALSE(t4.memory_temperature_c.has_value());  // GDDR6: no sensor
  EXPECT_FALSE(t4.remapped_rows_correctable.has_value());
  EXPECT_FALSE(t4.nvlink_tx_bytes_per_s.has_value());
  EXPECT_EQ(t4.pcie_replay_count, 0u);
  EXPECT_EQ(t4.xid_count, 0u);
}

TEST(SyntheticSampler, IdleProfileHoldsMemoryAndComputesNothing) {
  auto sampler = sim("sim:1xH100-80GB");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load(kGpu0, job("idle", {42}));
  GpuSample s = one(*sampler, kStartMs + 5 * kMinute);
  EXPECT_EQ(s.gpu_util_percent, 0.0);
  EXPECT_GT(s.memory_used_bytes.value_or(0), 4ull << 30);
  EXPECT_NE(*s.throttle_reasons & kThrottleGpuIdle, 0u);
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_EQ(s.processes[0].memory_bytes, s.memory_used_bytes);
  EXPECT_EQ(s.processes[0].sm_util_percent, 0.0);
}

TEST(SyntheticSampler, DataWaitScalesUtilizationDown) {
  auto sampler = sim("sim:1xH100-80GB");
  ASSERT_TRUE(sampler);
  SyntheticLoad load = job("healthy");
  load.data_wait_fraction = 0.5;
  sampler->set_synthetic_load(kGpu0, load);
  for (const GpuSample& s : series(*sampler, 0, 2 * kMinute, 3 * kSecond)) {
    EXPECT_GE(s.gpu_util_percent.value_or(0), 45);
    EXPECT_LE(s.gpu_util_percent.value_or(100), 49);
  }
}

TEST(SyntheticSampler, ReportsTheLoadsPidsWithTheMemorySplitAmongThem) {
  auto sampler = sim("sim:1xH100-80GB");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load(kGpu0, job("healthy", {11, 12, 13}));
  GpuSample s = one(*sampler, kStartMs + kMinute);
  ASSERT_EQ(s.processes.size(), 3u);
  uint64_t memory = 0;
  double util = 0;
  for (const auto& p : s.processes) {
    memory += p.memory_bytes.value_or(0);
    util += p.sm_util_percent.value_or(0);
  }
  EXPECT_EQ(s.processes[2].pid, 13);
  EXPECT_EQ(memory, s.memory_used_bytes);
  EXPECT_NEAR(util, *s.gpu_util_percent, 1e-9);
  EXPECT_NEAR(static_cast<double>(*s.processes[1].memory_bytes),
              static_cast<double>(*s.memory_used_bytes) / 3, 1);
}

TEST(SyntheticSampler, SameInputsGiveIdenticalSamples) {
  auto a = sim("sim:2xH100-80GB,1xL4");
  auto b = sim("sim:2xH100-80GB,1xL4");
  ASSERT_TRUE(a && b);
  for (auto* s : {a.get(), b.get()}) {
    s->set_synthetic_load(kGpu0, job("data-bound", {7}));
    s->set_synthetic_load("GPU-sim-2-L4", job("overheating", {8, 9}));
  }
  for (int64_t t : std::initializer_list<int64_t>{0, 1234, 5 * kMinute, 17 * kMinute + 1}) {
    auto sa = a->sample(util::from_millis(kStartMs + t));
    auto sb = b->sample(util::from_millis(kStartMs + t));
    ASSERT_TRUE(sa.is_ok() && sb.is_ok());
    ASSERT_EQ(sa->size(), sb->size());
    for (size_t i = 0; i < sa->size(); ++i) EXPECT_EQ(describe((*sa)[i]), describe((*sb)[i]));
  }
  // The jitter is real: another moment reads differently.
  EXPECT_NE(describe(one(*a, kStartMs + 1000)), describe(one(*a, kStartMs + 2000)));
}

TEST(SyntheticSampler, ClearingALoadReturnsTheGpuToIdle) {
  auto sampler = sim("sim:1xH100-80GB");
  ASSERT_TRUE(sampler);
  int64_t now = kStartMs + 3 * kMinute;
  std::string idle = describe(one(*sampler, now));
  sampler->set_synthetic_load(kGpu0, job("healthy", {5}));
  GpuSample busy = one(*sampler, now);
  EXPECT_GT(busy.gpu_util_percent.value_or(0), 90);
  EXPECT_EQ(busy.processes.size(), 1u);
  sampler->set_synthetic_load(kGpu0, std::nullopt);
  EXPECT_EQ(describe(one(*sampler, now)), idle);
}

TEST(SyntheticSampler, AGpuInMigModeReportsNoUtilization) {
  auto sampler = sim("sim:1xA100-40GB:mig");
  ASSERT_TRUE(sampler);
  sampler->set_synthetic_load("GPU-sim-0-A100-40GB", job("healthy", {3}));
  auto samples = sampler->sample(util::from_millis(kStartMs + kMinute));
  ASSERT_TRUE(samples.is_ok());
  ASSERT_EQ(samples->size(), 1u);  // no MIG instances, so no MIG devices
  const GpuSample& s = (*samples)[0];
  EXPECT_FALSE(s.is_mig);
  EXPECT_FALSE(s.gpu_util_percent.has_value());
  EXPECT_GT(memory_share(s), 0.7);
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_FALSE(s.processes[0].sm_util_percent.has_value());
}

TEST(SyntheticSampler, LoadsMayChangeWhileSampling) {
  auto sampler = sim("sim:4xH100-80GB");
  ASSERT_TRUE(sampler);
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) {
      std::string uuid = fmt::format("GPU-sim-{}-H100-80GB", i % 4);
      if (i % 3 == 0) {
        sampler->set_synthetic_load(uuid, std::nullopt);
      } else {
        sampler->set_synthetic_load(uuid, job(i % 2 ? "healthy" : "memory-leak", {i}));
      }
    }
  });
  for (int i = 0; i < 2000; ++i) {
    auto samples = sampler->sample(util::from_millis(kStartMs + i * kSecond));
    ASSERT_TRUE(samples.is_ok());
    ASSERT_EQ(samples->size(), 4u);
    for (const auto& s : *samples) EXPECT_LE(s.processes.size(), 1u);
  }
  writer.join();
}

}  // namespace
}  // namespace trainyard::telemetry
