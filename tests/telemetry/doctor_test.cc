#include "telemetry/doctor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace trainyard::telemetry {
namespace {

constexpr uint64_t kGiB = 1ULL << 30;
constexpr int64_t kStepMs = 10'000;  // one sample every 10 s
constexpr int kSamples = 120;        // 20 minutes

// A job's telemetry from formulas: each GPU's utilization and memory share as functions of the
// sample number, so every case says exactly what it feeds the rules.
class JobBuilder {
 public:
  explicit JobBuilder(std::string model = "H100-80GB", uint64_t memory = 80 * kGiB)
      : model_(std::move(model)), memory_(memory) {}

  JobBuilder& gpu(
      std::function<double(int)> util, std::function<double(int)> memory_share,
      std::function<uint64_t(int)> throttle = [](int) { return 0; }, int samples = kSamples) {
    const int index = gpus_++;
    for (int i = 0; i < samples; ++i) {
      GpuSample s;
      s.time = util::from_millis(1'700'000'000'000 + i * kStepMs);
      s.index = index;
      s.uuid = "GPU-test-" + std::to_string(index);
      s.model = model_;
      s.gpu_util_percent = util(i);
      s.memory_total_bytes = memory_;
      s.memory_used_bytes = static_cast<uint64_t>(memory_share(i) * static_cast<double>(memory_));
      s.throttle_reasons = throttle(i);
      s.temperature_c = 70;
      samples_.push_back(s);
    }
    return *this;
  }

  // `count` metric lines, one per step.
  JobBuilder& steps(int count, std::function<double(int)> step_time, double data_wait_share,
                    std::string dtype = "bf16") {
    for (int i = 0; i < count; ++i) {
      StepMetrics m;
      m.time = util::from_millis(1'700'000'000'000 + i * 1000);
      m.step = i + 1;
      m.samples = 64;
      m.loss = 1.0 / (i + 1);
      m.step_time_s = step_time(i);
      m.data_wait_s = *m.step_time_s * data_wait_share;
      m.dtype = dtype;
      steps_.push_back(m);
    }
    return *this;
  }

  JobTelemetry build() const {
    JobTelemetry job{.job_id = "42", .accelerator_model = model_, .gpus = gpus_};
    job.samples = samples_;
    std::stable_sort(job.samples.begin(), job.samples.end(),
                     [](const GpuSample& a, const GpuSample& b) {
                       return util::to_millis(a.time) < util::to_millis(b.time);
                     });
    job.steps = steps_;
    return job;
  }

 private:
  std::string model_;
  uint64_t memory_;
  int gpus_ = 0;
  std::vector<GpuSample> samples_;
  std::vector<StepMetrics> steps_;
};

// Busy and steady: 85..95% utilization.
double busy(int i) {
  return 90 + 5 * std::sin(i * 0.7);
}
std::function<double(int)> flat(double v) {
  return [v](int) { return v; };
}
double steady_step(int i) {
  return 0.25 + 0.005 * std::sin(i * 1.3);
}

const Finding* find(const Diagnosis& d, std::string_view rule) {
  for (const auto& f : d.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

std::string rules_of(const Diagnosis& d) {
  std::string out;
  for (const auto& f : d.findings) out += f.rule + " ";
  return out;
}

std::string all_evidence(const Finding& f) {
  std::string out;
  for (const auto& e : f.evidence) out += e + "\n";
  return out;
}

TEST(Doctor, HealthyJobHasNoFindings) {
  auto d = diagnose(JobBuilder()
                        .gpu(busy, flat(0.6))
                        .gpu(busy, flat(0.62))
                        .steps(300, steady_step, 0.01)
                        .build());
  EXPECT_TRUE(d.findings.empty()) << rules_of(d);
  EXPECT_EQ(d.verdict, "healthy");
  EXPECT_EQ(d.stats.devices, 2);
  EXPECT_TRUE(d.stats.enough_samples);
  EXPECT_NEAR(*d.stats.data_wait_share, 0.01, 1e-9);
  EXPECT_EQ(d.stats.dtype, "bf16");
}

TEST(Doctor, TooLittleDataGivesNoDiagnosisEvenWhenItLooksBad) {
  // Two minutes of an idle, fp32, input-starved GPU: not enough to say anything yet.
  auto job = JobBuilder()
                 .gpu(
                     flat(0), flat(0.95), [](int) { return kThrottleHwThermal; }, 12)
                 .steps(20, steady_step, 0.5, "fp32")
                 .build();
  auto d = diagnose(job);
  EXPECT_TRUE(d.findings.empty()) << rules_of(d);
  EXPECT_TRUE(d.verdict.starts_with("not enough data yet")) << d.verdict;
  // Many samples over a short time are not enough either: the minimum is also a duration.
  DoctorThresholds t;
  t.min_duration = util::seconds(30 * 60);
  EXPECT_TRUE(diagnose(JobBuilder().gpu(flat(0), flat(0.95)).build(), t).findings.empty());
}

TEST(Doctor, InputBoundFromStepMetricsAboveFivePercentOnly) {
  auto above = diagnose(JobBuilder().gpu(busy, flat(0.6)).steps(100, steady_step, 0.06).build());
  const Finding* f = find(above, "input-bound");
  ASSERT_NE(f, nullptr) << rules_of(above);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_NE(all_evidence(*f).find("data wait 6.0% of step time"), std::string::npos)
      << all_evidence(*f);
  EXPECT_NE(f->action.find("num_workers"), std::string::npos);
  EXPECT_TRUE(above.verdict.starts_with("input-bound: ")) << above.verdict;

  auto below = diagnose(JobBuilder().gpu(busy, flat(0.6)).steps(100, steady_step, 0.049).build());
  EXPECT_EQ(find(below, "input-bound"), nullptr) << rules_of(below);
}

TEST(Doctor, InputBoundFromSamplesWhenMemoryIsHeldAndUtilizationFluctuates) {
  auto bursty = [](int i) { return i % 4 == 0 ? 2.0 : 95.0; };  // p95 95, p5 2
  auto d = diagnose(JobBuilder().gpu(bursty, flat(0.7)).build());
  const Finding* f = find(d, "input-bound");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_NE(all_evidence(*f).find("fluctuating"), std::string::npos) << all_evidence(*f);
  // Low and steady utilization with the model loaded counts too.
  EXPECT_NE(find(diagnose(JobBuilder().gpu(flat(35), flat(0.7)).build()), "input-bound"), nullptr);
  // Memory at 50% or less: the GPU-sample guess is not made.
  EXPECT_EQ(find(diagnose(JobBuilder().gpu(bursty, flat(0.5)).build()), "input-bound"), nullptr);
  // Step metrics that measured a small data wait overrule the guess.
  auto measured =
      diagnose(JobBuilder().gpu(bursty, flat(0.7)).steps(100, steady_step, 0.01).build());
  EXPECT_EQ(find(measured, "input-bound"), nullptr) << rules_of(measured);
}

TEST(Doctor, UnderFilledGpuSuggestsLargerBatchAndNamesASmallerFit) {
  auto d = diagnose(JobBuilder().gpu(flat(30), flat(0.2)).build());
  const Finding* f = find(d, "under-filled");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_NE(all_evidence(*f).find("peak memory 16.0 GiB of 80.0 GiB (20.0%)"), std::string::npos)
      << all_evidence(*f);
  EXPECT_NE(f->action.find("memory allows about 4x"), std::string::npos) << f->action;
  EXPECT_NE(f->action.find("gradient-accumulation"), std::string::npos);
  // 16 GiB x 1.25 = 20 GiB: the H100's 1g.20gb MIG profile.
  EXPECT_NE(f->action.find("MIG 1g.20gb"), std::string::npos) << f->action;
  EXPECT_EQ(find(d, "right-size"), nullptr) << "under-filled already names the smaller fit";

  EXPECT_EQ(find(diagnose(JobBuilder().gpu(flat(30), flat(0.31)).build()), "under-filled"),
            nullptr);
  EXPECT_EQ(find(diagnose(JobBuilder().gpu(flat(55), flat(0.2)).build()), "under-filled"), nullptr);
}

TEST(Doctor, RightSizeNamesTheSmallestMigProfileThatFits) {
  // 35% of 80 GiB = 28 GiB; with 25% headroom 35 GiB: 3g.40gb.
  auto d = diagnose(JobBuilder().gpu(flat(35), flat(0.35)).build());
  const Finding* f = find(d, "right-size");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_EQ(f->severity, "info");
  EXPECT_NE(f->summary.find("MIG 3g.40gb"), std::string::npos) << f->summary;
  EXPECT_NE(f->action.find("nvidia.com/mig-3g.40gb: 1"), std::string::npos) << f->action;
  // Without MIG, a smaller catalogued GPU: 35% of 48 GiB x 1.25 = 21 GiB.
  auto l40s = diagnose(JobBuilder("L40S", 48 * kGiB).gpu(flat(35), flat(0.35)).build());
  const Finding* g = find(l40s, "right-size");
  ASSERT_NE(g, nullptr) << rules_of(l40s);
  // L4, A10 and A10G all have 24 GiB; the fastest of them is named.
  EXPECT_NE(g->summary.find("fit on one A10 (24 GiB)"), std::string::npos) << g->summary;
  // Busy GPUs are not right-sized.
  EXPECT_EQ(find(diagnose(JobBuilder().gpu(busy, flat(0.35)).build()), "right-size"), nullptr);
}

TEST(Doctor, Fp32OnTensorCoreGpus) {
  auto h100 =
      diagnose(JobBuilder().gpu(busy, flat(0.6)).steps(100, steady_step, 0.01, "fp32").build());
  const Finding* f = find(h100, "fp32-on-tensor-cores");
  ASSERT_NE(f, nullptr) << rules_of(h100);
  EXPECT_NE(f->action.find("bfloat16"), std::string::npos);
  EXPECT_NE(all_evidence(*f).find("989 TFLOPS"), std::string::npos) << all_evidence(*f);

  auto t4 = diagnose(JobBuilder("T4", 16 * kGiB)
                         .gpu(busy, flat(0.6))
                         .steps(100, steady_step, 0.01, "float32")
                         .build());
  const Finding* g = find(t4, "fp32-on-tensor-cores");
  ASSERT_NE(g, nullptr) << rules_of(t4);
  EXPECT_NE(g->action.find("GradScaler"), std::string::npos) << g->action;

  auto p100 = diagnose(JobBuilder("P100", 16 * kGiB)
                           .gpu(busy, flat(0.6))
                           .steps(100, steady_step, 0.01, "fp32")
                           .build());
  EXPECT_EQ(find(p100, "fp32-on-tensor-cores"), nullptr) << "no tensor cores on Pascal";
  auto bf16 =
      diagnose(JobBuilder().gpu(busy, flat(0.6)).steps(100, steady_step, 0.01, "bf16").build());
  EXPECT_EQ(find(bf16, "fp32-on-tensor-cores"), nullptr);
}

TEST(Doctor, Fp32ThatTrainyardTuneChoseWithTf32IsNotCalledTensorCoresUnused) {
  auto tuned = [](bool tf32) {
    JobTelemetry job =
        JobBuilder().gpu(busy, flat(0.6)).steps(100, steady_step, 0.01, "fp32").build();
    auto line = parse_step_metrics_line(
        std::string(R"({"time":1700000000,"dtype":"fp32","tune_micro_batch":64,)") +
        R"("tune_accum_steps":1,"tune_tf32":)" + (tf32 ? "true" : "false") + "}");
    EXPECT_TRUE(line.is_ok()) << line.status().to_string();
    job.steps.insert(job.steps.begin(), *line);
    return diagnose(job);
  };
  // Measured faster than bf16 and run with TF32: the tensor cores are in use.
  auto with_tf32 = tuned(true);
  EXPECT_EQ(find(with_tf32, "fp32-on-tensor-cores"), nullptr) << rules_of(with_tf32);
  // Plain fp32 (TF32 off) still is.
  auto without = tuned(false);
  EXPECT_NE(find(without, "fp32-on-tensor-cores"), nullptr) << rules_of(without);
}

TEST(Doctor, MemoryLeakWhenMemoryKeepsRising) {
  // 10% -> ~81% over 20 minutes: each 10-sample window ~6% above the one before.
  auto rising = [](int i) { return 0.10 + 0.006 * i; };
  auto d = diagnose(JobBuilder().gpu(busy, rising).build());
  const Finding* f = find(d, "memory-leak");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_NE(all_evidence(*f).find("GPU 0: memory in use"), std::string::npos) << all_evidence(*f);
  EXPECT_NE(f->action.find("loss.item()"), std::string::npos);

  // A slow climb (2% per window, never given back) is a leak too.
  EXPECT_NE(find(diagnose(JobBuilder().gpu(busy, [](int i) { return 0.3 + 0.002 * i; }).build()),
                 "memory-leak"),
            nullptr);
  // Start-up growth that levels off, and noise around a level, are not.
  auto startup = [](int i) { return i < 30 ? 0.2 + 0.015 * i : 0.65; };
  EXPECT_EQ(find(diagnose(JobBuilder().gpu(busy, startup).build()), "memory-leak"), nullptr);
  auto noisy = [](int i) { return 0.6 + 0.04 * std::sin(i * 0.9); };
  EXPECT_EQ(find(diagnose(JobBuilder().gpu(busy, noisy).build()), "memory-leak"), nullptr);
}

TEST(Doctor, NearOomAboveNinetyPercentOfCapacity) {
  auto d = diagnose(JobBuilder().gpu(busy, flat(0.95)).build());
  const Finding* f = find(d, "near-oom");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_NE(all_evidence(*f).find("(95.0%; threshold 90.0%)"), std::string::npos)
      << all_evidence(*f);
  EXPECT_EQ(find(diagnose(JobBuilder().gpu(busy, flat(0.89)).build()), "near-oom"), nullptr);
}

TEST(Doctor, IdleGpuIsReportedOnceAndNotAlsoAsUnderFilled) {
  auto d = diagnose(JobBuilder()
                        .gpu(busy, flat(0.6))
                        .gpu([](int i) { return i % 7 == 0 ? 4.0 : 0.0; }, flat(0.05))
                        .build());
  const Finding* f = find(d, "idle-gpu");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_EQ(f->summary, "1 of the job's 2 GPUs are held but idle");
  EXPECT_NE(all_evidence(*f).find("GPU 1: util below 5% in 100.0% of 120 samples"),
            std::string::npos)
      << all_evidence(*f);
  EXPECT_EQ(d.findings.size(), 1u) << rules_of(d);
  // Idle in 75% of the samples is below the 80% threshold.
  auto mostly = [](int i) { return i % 4 == 0 ? 90.0 : 1.0; };
  EXPECT_EQ(find(diagnose(JobBuilder().gpu(mostly, flat(0.6)).build()), "idle-gpu"), nullptr);
}

TEST(Doctor, ImbalanceBetweenGpus) {
  auto d = diagnose(JobBuilder()
                        .gpu(busy, flat(0.4))
                        .gpu([](int i) { return 40 + 5 * std::sin(i); }, flat(0.4))
                        .build());
  const Finding* f = find(d, "gpu-imbalance");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_NE(all_evidence(*f).find("Jensen-Shannon distance"), std::string::npos);
  EXPECT_EQ(find(d, "communication-bound"), nullptr);
  // The same distribution on both: no imbalance.
  auto same = diagnose(
      JobBuilder().gpu(busy, flat(0.6)).gpu([](int i) { return busy(i + 3); }, flat(0.6)).build());
  EXPECT_EQ(find(same, "gpu-imbalance"), nullptr) << rules_of(same);
}

TEST(Doctor, CommunicationHintForBalancedFedMultiGpuJobWithLowUtilization) {
  auto low = [](int i) { return 35 + 5 * std::sin(i * 0.5); };
  auto d = diagnose(
      JobBuilder().gpu(low, flat(0.6)).gpu(low, flat(0.6)).steps(100, steady_step, 0.01).build());
  const Finding* f = find(d, "communication-bound");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_EQ(f->severity, "info");
  EXPECT_NE(f->action.find("--trace"), std::string::npos);
  // One GPU: no communication to blame.
  auto single = diagnose(JobBuilder().gpu(low, flat(0.6)).steps(100, steady_step, 0.01).build());
  EXPECT_EQ(find(single, "communication-bound"), nullptr) << rules_of(single);
}

TEST(Doctor, ThermalThrottlingAboveTenPercentOfSamples) {
  auto often = [](int i) { return i % 5 == 0 ? kThrottleHwThermal : 0; };  // 20%
  auto d = diagnose(JobBuilder().gpu(busy, flat(0.6), often).build());
  const Finding* f = find(d, "thermal-throttling");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_NE(all_evidence(*f).find("slowdown in 20.0% of 120 samples"), std::string::npos)
      << all_evidence(*f);
  auto rarely = [](int i) { return i % 20 == 0 ? kThrottleSwThermal : 0; };  // 5%
  EXPECT_EQ(find(diagnose(JobBuilder().gpu(busy, flat(0.6), rarely).build()), "thermal-throttling"),
            nullptr);
  // Power cap and idle clocks are benign reasons.
  auto benign = [](int) { return kThrottleSwPowerCap | kThrottleGpuIdle; };
  EXPECT_EQ(find(diagnose(JobBuilder().gpu(busy, flat(0.6), benign).build()), "thermal-throttling"),
            nullptr);
}

TEST(Doctor, StepOutliersNeedMoreThanTenAfterAHundredSteps) {
  auto spikes_every = [](int period) {
    return [period](int i) { return i % period == period - 1 ? 1.5 : steady_step(i); };
  };
  // 300 steps, 10 of warm-up skipped: every 20th slow = 15 outliers.
  auto d = diagnose(JobBuilder().gpu(busy, flat(0.6)).steps(300, spikes_every(20), 0.01).build());
  const Finding* f = find(d, "step-outliers");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_NE(all_evidence(*f).find("15 of 290 steps"), std::string::npos) << all_evidence(*f);
  EXPECT_NE(all_evidence(*f).find("outlier steps: 20, 40, 60"), std::string::npos);
  // Every 30th: 10 outliers, not more than 10.
  auto few = diagnose(JobBuilder().gpu(busy, flat(0.6)).steps(300, spikes_every(30), 0.01).build());
  EXPECT_EQ(find(few, "step-outliers"), nullptr) << rules_of(few);
  // 100 steps are not enough to judge.
  auto short_run =
      diagnose(JobBuilder().gpu(busy, flat(0.6)).steps(105, spikes_every(5), 0.01).build());
  EXPECT_EQ(find(short_run, "step-outliers"), nullptr) << rules_of(short_run);
}

TEST(Doctor, WarningsComeFirstAndTheVerdictCountsTheRest) {
  auto d = diagnose(JobBuilder().gpu(flat(35), flat(0.35)).gpu(flat(35), flat(0.95)).build());
  ASSERT_GE(d.findings.size(), 2u) << rules_of(d);
  EXPECT_EQ(d.findings.front().severity, "warning");
  EXPECT_NE(d.verdict.find("more finding"), std::string::npos) << d.verdict;
}

TEST(Doctor, ToJsonCarriesFindingsAndStats) {
  auto d = diagnose(JobBuilder().gpu(busy, flat(0.95)).build());
  const auto j = to_json(d);
  EXPECT_EQ(j["job_id"], "42");
  EXPECT_EQ(j["verdict"], d.verdict);
  ASSERT_EQ(j["findings"].size(), d.findings.size());
  EXPECT_EQ(j["findings"][0]["rule"], "near-oom");
  EXPECT_TRUE(j["findings"][0]["evidence"].is_array());
  EXPECT_EQ(j["stats"]["devices"], 1);
  EXPECT_NEAR(j["stats"]["memory_peak_share"].get<double>(), 0.95, 1e-6);
  EXPECT_TRUE(j["stats"]["data_wait_share"].is_null());
}

TEST(Doctor, FindingsNameTheSdkOptionThatFixesThem) {
  auto d = diagnose(JobBuilder().gpu(busy, flat(0.6)).steps(100, steady_step, 0.2).build());
  const Finding* f = find(d, "input-bound");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_NE(f->sdk.find("trainyard.data.Loader("), std::string::npos) << f->sdk;
  EXPECT_EQ(to_json(*f)["sdk"], f->sdk);
  auto hot =
      diagnose(JobBuilder().gpu(busy, flat(0.6), [](int) { return kThrottleHwThermal; }).build());
  const Finding* t = find(hot, "thermal-throttling");
  ASSERT_NE(t, nullptr) << rules_of(hot);
  EXPECT_TRUE(t->sdk.empty()) << "a node problem has no SDK fix";
  EXPECT_TRUE(to_json(*t)["sdk"].is_null());
  for (std::string_view rule :
       {"under-filled", "near-oom", "fp32-on-tensor-cores", "tensor-cores-idle",
        "communication-bound", "gpu-imbalance", "idle-gpu"}) {
    EXPECT_NE(sdk_fix(rule).find("trainyard."), std::string_view::npos) << rule;
  }
  EXPECT_TRUE(sdk_fix("memory-leak").empty());
}

// trainyard.distributed's comm_wait_s: communication that backward did not hide.
JobTelemetry comm_job(double wait_share, std::function<double(int)> util) {
  JobTelemetry job =
      JobBuilder().gpu(util, flat(0.6)).gpu(util, flat(0.6)).steps(100, steady_step, 0.01).build();
  for (auto& m : job.steps) {
    m.comm_wait_s = *m.step_time_s * wait_share;
    m.comm_bytes = 8'000'000;
  }
  return job;
}

TEST(Doctor, CommunicationBoundMeasuredFromTheSdksCommWait) {
  auto d = diagnose(comm_job(0.3, busy));
  const Finding* f = find(d, "communication-bound");
  ASSERT_NE(f, nullptr) << rules_of(d);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_NE(all_evidence(*f).find("30.0% of step time"), std::string::npos) << all_evidence(*f);
  EXPECT_NE(all_evidence(*f).find("8.0 MB all-reduced per step"), std::string::npos);
  EXPECT_NE(f->sdk.find("compression=\"fp16\""), std::string::npos) << f->sdk;
  EXPECT_NE(f->sdk.find("powersgd"), std::string::npos) << f->sdk;
  EXPECT_NE(f->action.find("raise the rank"), std::string::npos) << f->action;
  EXPECT_NEAR(*d.stats.comm_wait_share, 0.3, 1e-9);
  // Measured and small: neither the measured rule nor the utilization guess fires.
  auto low = [](int i) { return 35 + 5 * std::sin(i * 0.5); };
  auto fine = diagnose(comm_job(0.1, low));
  EXPECT_EQ(find(fine, "communication-bound"), nullptr) << rules_of(fine);
  EXPECT_NEAR(*fine.stats.comm_bytes_per_step, 8e6, 1e-6);
}

TEST(Doctor, StatsCarryTheNewestChoiceOfTrainyardTune) {
  JobTelemetry job = JobBuilder().steps(60, steady_step, 0.01).build();
  auto tuned = parse_step_metrics_line(
      R"({"time":1700000000,"dtype":"bf16","tune_micro_batch":64,"tune_accum_steps":4,)"
      R"("tune_world_size":1,"tune_global_batch":256,"tune_target_global_batch":256,)"
      R"("tune_largest_micro_batch":70,"tune_speedup":4.2,"tune_channels_last":true,"tune_tf32":false})");
  ASSERT_TRUE(tuned.is_ok()) << tuned.status().to_string();
  ASSERT_TRUE(tuned->tune.has_value());
  job.steps.insert(job.steps.begin(), *tuned);
  auto d = diagnose(job);
  ASSERT_TRUE(d.stats.tune.has_value());
  EXPECT_EQ(d.stats.tune->micro_batch, 64);
  EXPECT_EQ(d.stats.tune->accum_steps, 4);
  EXPECT_TRUE(d.stats.tune->channels_last);
  const auto j = to_json(d)["stats"]["tune"];
  EXPECT_EQ(j["largest_micro_batch"], 70);
  EXPECT_DOUBLE_EQ(j["speedup"].get<double>(), 4.2);
  EXPECT_TRUE(to_json(diagnose(JobBuilder().steps(60, steady_step, 0.01).build()))["stats"]["tune"]
                  .is_null());
  auto bad = parse_step_metrics_line(R"({"time":1,"tune_micro_batch":64,"tune_speedup":"x"})");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("`tune_speedup`"), std::string::npos);
  auto negative = parse_step_metrics_line(R"({"time":1,"comm_bytes":-5})");
  ASSERT_FALSE(negative.is_ok());
  EXPECT_NE(negative.status().message().find("`comm_bytes`"), std::string::npos);
}

TEST(StepMetrics, ParsesTheContractExample) {
  auto m = parse_step_metrics_line(
      R"({"time":1748779212.5,"rank":0,"attempt":2,"step":1201,"samples":64,"loss":0.4127,)"
      R"("data_wait_s":0.0011,"step_time_s":0.0532,"dtype":"fp32","lr":0.0029})");
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->time, util::from_millis(1748779212500));
  EXPECT_EQ(m->step, 1201);
  EXPECT_EQ(m->samples, 64);
  EXPECT_DOUBLE_EQ(*m->loss, 0.4127);
  EXPECT_DOUBLE_EQ(*m->data_wait_s, 0.0011);
  EXPECT_DOUBLE_EQ(*m->step_time_s, 0.0532);
  EXPECT_EQ(m->dtype, "fp32");
  auto bare = parse_step_metrics_line(R"({"time": 1, "loss": null, "step": 3.0})");
  ASSERT_TRUE(bare.is_ok()) << bare.status().to_string();
  EXPECT_FALSE(bare->loss.has_value());
  EXPECT_EQ(bare->step, 3);
  EXPECT_FALSE(bare->step_time_s.has_value());
}

TEST(StepMetrics, BadLinesSayWhichField) {
  auto error = [](std::string_view line) {
    auto m = parse_step_metrics_line(line);
    return m.is_ok() ? std::string("accepted") : m.status().message();
  };
  EXPECT_NE(error("{\"time\":1,").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error("[1]").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(error(R"({"step":1})").find("missing `time`"), std::string::npos);
  EXPECT_NE(error(R"({"time":1,"step":"7"})").find("`step` must be an integer >= 0"),
            std::string::npos);
  EXPECT_NE(error(R"({"time":1,"step":1.5})").find("`step`"), std::string::npos);
  EXPECT_NE(error(R"({"time":1,"data_wait_s":-0.1})").find("`data_wait_s` must be a finite number"),
            std::string::npos);
  EXPECT_NE(error(R"({"time":1,"dtype":16})").find("`dtype` must be a string"), std::string::npos);
  EXPECT_NE(error(R"({"time":1e300})").find("`time`"), std::string::npos);
}

TEST(StepMetrics, FileTextSkipsATornLastLineButNotABadMiddleLine) {
  auto steps = parse_step_metrics_text(
      "{\"time\":1,\"step\":1}\r\n\n{\"time\":2,\"step\":2}\n{\"time\":3,\"st", "metrics.jsonl");
  ASSERT_TRUE(steps.is_ok()) << steps.status().to_string();
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[1].step, 2);
  // A complete last line without its newline is kept.
  auto complete = parse_step_metrics_text("{\"time\":1}\n{\"time\":2}", "m");
  ASSERT_TRUE(complete.is_ok());
  EXPECT_EQ(complete->size(), 2u);
  auto bad = parse_step_metrics_text("{\"time\":1}\n{\"time\":\n{\"time\":3}\n", "metrics.jsonl");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(bad.status().message().starts_with("metrics.jsonl:2: ")) << bad.status().message();
  EXPECT_FALSE(read_step_metrics_file("/nonexistent/metrics.jsonl").is_ok());
}

}  // namespace
}  // namespace trainyard::telemetry
