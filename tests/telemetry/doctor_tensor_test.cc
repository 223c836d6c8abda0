// The doctor's tensor-cores-idle rule: a busy tensor-core GPU whose measured tensor activity is
// ~0 gets a finding that suggests mixed precision, worded after what the job says its dtype is.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "telemetry/doctor.h"

namespace trainyard::telemetry {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int kSamples = 60;  // 10 minutes at 10 s

// One GPU of `model`, busy at `util` %, with tensor activity `tensor` % (negative: not reported),
// and `steps` metric lines reporting `dtype` ("" for none).
JobTelemetry job(std::string model, double util, double tensor, std::string dtype = "",
                 int steps = 0) {
  JobTelemetry j{.job_id = "7", .accelerator_model = model, .gpus = 1};
  for (int i = 0; i < kSamples; ++i) {
    GpuSample s;
    s.time = util::from_millis(kT0 + i * 10'000);
    s.uuid = "GPU-t";
    s.model = model;
    s.gpu_util_percent = util + (i % 3);
    s.memory_total_bytes = 80ull << 30;
    s.memory_used_bytes = 60ull << 30;  // 75%: no under-filled or near-OOM finding
    s.throttle_reasons = 0;
    if (tensor >= 0) s.tensor_active_percent = tensor;
    j.samples.push_back(s);
  }
  for (int i = 0; i < steps; ++i) {
    j.steps.push_back(StepMetrics{.time = util::from_millis(kT0 + i * 1000),
                                  .step = i + 1,
                                  .samples = 64,
                                  .loss = 1.0,
                                  .data_wait_s = 0.001,
                                  .step_time_s = 0.5,
                                  .dtype = dtype});
  }
  return j;
}

const Finding* find(const Diagnosis& d, const std::string& rule) {
  for (const auto& f : d.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

TEST(DoctorTensor, BusyGpuWithIdleTensorCoresSuggestsBf16) {
  const Diagnosis d = diagnose(job("H100-80GB", 93, 0.1));
  const Finding* f = find(d, "tensor-cores-idle");
  ASSERT_NE(f, nullptr) << d.verdict;
  EXPECT_EQ(f->severity, "warning");
  EXPECT_NE(f->summary.find("without its tensor cores"), std::string::npos) << f->summary;
  EXPECT_NE(f->action.find("torch.bfloat16"), std::string::npos) << f->action;
  ASSERT_FALSE(f->evidence.empty());
  EXPECT_NE(f->evidence[0].find("tensor-core activity mean 0.10%"), std::string::npos)
      << f->evidence[0];
}

TEST(DoctorTensor, AJobClaimingBf16WithIdleTensorCoresIsToldAutocastMissesTheModel) {
  const Diagnosis d = diagnose(job("H100-80GB", 93, 0.2, "bf16", 60));
  const Finding* f = find(d, "tensor-cores-idle");
  ASSERT_NE(f, nullptr) << d.verdict;
  EXPECT_NE(f->summary.find("reports bf16"), std::string::npos) << f->summary;
  EXPECT_NE(f->action.find("inside torch.autocast"), std::string::npos) << f->action;
  EXPECT_EQ(f->evidence.back(), "the job reports dtype \"bf16\"");
}

TEST(DoctorTensor, AnFp32JobGetsTheMeasurementAddedToTheDtypeFinding) {
  const Diagnosis d = diagnose(job("H100-80GB", 93, 0.0, "fp32", 60));
  EXPECT_EQ(find(d, "tensor-cores-idle"), nullptr);
  const Finding* f = find(d, "fp32-on-tensor-cores");
  ASSERT_NE(f, nullptr) << d.verdict;
  EXPECT_NE(f->evidence.back().find("tensor-core activity mean 0.00%"), std::string::npos);
}

TEST(DoctorTensor, QuietWhenTensorCoresWorkOrCannotBeSeen) {
  EXPECT_EQ(find(diagnose(job("H100-80GB", 93, 45)), "tensor-cores-idle"), nullptr);
  // No measurement (A100 through NVML has no GPM): no guess.
  EXPECT_EQ(find(diagnose(job("A100-80GB", 93, -1)), "tensor-cores-idle"), nullptr);
  // A GPU that barely computes is another rule's business.
  EXPECT_EQ(find(diagnose(job("H100-80GB", 20, 0)), "tensor-cores-idle"), nullptr);
  // No tensor cores on Pascal.
  EXPECT_EQ(find(diagnose(job("P100", 93, 0)), "tensor-cores-idle"), nullptr);
  // Too little history.
  JobTelemetry short_job = job("H100-80GB", 93, 0);
  short_job.samples.resize(10);
  EXPECT_EQ(find(diagnose(short_job), "tensor-cores-idle"), nullptr);
}

TEST(DoctorTensor, OldT4GetsFp16WithGradScaler) {
  JobTelemetry j = job("T4", 93, 0.0);
  const Diagnosis d = diagnose(j);  // find() points into it: keep it alive
  const Finding* f = find(d, "tensor-cores-idle");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->action.find("GradScaler"), std::string::npos) << f->action;
}

}  // namespace
}  // namespace trainyard::telemetry
