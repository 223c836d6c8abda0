#include <gtest/gtest.h>

#include "model/accelerator.h"
#include "model/job.h"
#include "model/job_state.h"
#include "model/quantity.h"

namespace trainyard::model {
namespace {

TEST(Quantity, ParsesKubernetesMemoryAndCpu) {
  EXPECT_EQ(parse_bytes("32Gi")->value(), int64_t{32} << 30);
  EXPECT_EQ(parse_bytes("1G")->value(), 1000000000);
  EXPECT_EQ(parse_bytes("1024")->value(), 1024);
  EXPECT_FALSE(parse_bytes("two").is_ok());
  EXPECT_FALSE(parse_bytes("-1Gi").is_ok());
  EXPECT_NE(parse_bytes("12XB").status().message().find("Gi"), std::string::npos);
  EXPECT_EQ(parse_cpu("500m")->value(), 500);
  EXPECT_EQ(parse_cpu("2.5")->value(), 2500);
  EXPECT_FALSE(parse_cpu("0.0001").is_ok());
  EXPECT_FALSE(parse_cpu("eight").is_ok());
}

TEST(AcceleratorCatalog, HasRealFiguresAndAliases) {
  const Accelerator* h100 = find_accelerator("h100");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->name, "H100-80GB");
  EXPECT_EQ(h100->memory, gib(80));
  EXPECT_TRUE(h100->nvlink);
  EXPECT_GT(h100->fp16_tflops, find_accelerator("A100-80GB")->fp16_tflops);
  EXPECT_EQ(find_accelerator("V100M32")->name, "V100-32GB");
  EXPECT_EQ(find_accelerator("G2"), nullptr);
  EXPECT_EQ(canonical_accelerator_name("G2"), "G2");
  for (const char* name :
       {"H200-141GB", "A100-40GB", "L40S", "L4", "A10G", "T4", "V100-16GB", "P100", "K80"}) {
    EXPECT_NE(find_accelerator(name), nullptr) << name;
  }
}

TEST(AcceleratorCatalog, MigProfilesHaveValidPlacements) {
  for (const Accelerator& a : accelerator_catalog()) {
    for (const MigProfile& p : a.mig_profiles) {
      int instances = 0;
      for (int s = 0; s < kMigMemorySlices; ++s) {
        if ((p.start_mask >> s) & 1) {
          EXPECT_LE(s + p.memory_slices, kMigMemorySlices) << a.name << " " << p.name;
          ++instances;
        }
      }
      EXPECT_EQ(instances, p.max_instances) << a.name << " " << p.name;
    }
  }
  const MigProfile* small = find_accelerator("H100-80GB")->find_mig_profile("1g.10gb");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->max_instances, 7);
  EXPECT_EQ(find_accelerator("A100-40GB")->find_mig_profile("3g.20gb")->start_mask, 0b00010001);
  EXPECT_TRUE(find_accelerator("T4")->mig_profiles.empty());
}

TEST(MigShare, CountsComputeSlicesOutOfSevenRoundedDown) {
  EXPECT_EQ(mig_milli(1), 142);
  EXPECT_EQ(mig_milli(3), 428);
  EXPECT_EQ(mig_milli(4), 571);
  EXPECT_EQ(mig_milli(kMigComputeSlices), 1000);
  EXPECT_DOUBLE_EQ(mig_gpu_fraction(3), 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(mig_gpu_fraction(kMigComputeSlices), 1.0);
}

TEST(WorkerRequest, GpuShareCountsWholeFractionalAndMig) {
  WorkerRequest w;
  w.gpus = 2;
  EXPECT_EQ(w.gpu_share().value(), 2000);
  w = {};
  w.gpu_milli = GpuMilli(250);
  EXPECT_EQ(w.gpu_share().value(), 250);
  w = {};
  w.mig_profile = "3g.40gb";
  EXPECT_EQ(w.gpu_share().value(), 428);
}

TEST(JobLifecycle, FollowsTheStateMachineWithReasons) {
  JobLifecycle job;
  const util::Time t{};
  EXPECT_TRUE(job.transition(JobState::Admitted, t, "quota ok").is_ok());
  EXPECT_TRUE(job.transition(JobState::Placed, t, "node-1 GPUs 0,1").is_ok());
  EXPECT_TRUE(job.transition(JobState::Running, t, "process started").is_ok());
  EXPECT_TRUE(job.transition(JobState::Preempting, t, "higher priority").is_ok());
  EXPECT_TRUE(job.transition(JobState::Pending, t, "stopped after checkpoint").is_ok());
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_EQ(job.history().size(), 5u);
  EXPECT_EQ(job.history().back().reason, "stopped after checkpoint");
}

TEST(JobLifecycle, RefusesIllegalTransitionsAndMissingReasons) {
  JobLifecycle job;
  const util::Time t{};
  auto s = job.transition(JobState::Running, t, "skip ahead");
  EXPECT_EQ(s.code(), util::StatusCode::FailedPrecondition);
  EXPECT_EQ(s.message(), "a job cannot go from pending to running");
  EXPECT_EQ(job.transition(JobState::Admitted, t, "").code(), util::StatusCode::InvalidArgument);
  ASSERT_TRUE(job.transition(JobState::Cancelled, t, "user").is_ok());
  EXPECT_FALSE(job.transition(JobState::Pending, t, "revive").is_ok());
  EXPECT_TRUE(is_terminal(job.state()));
}

}  // namespace
}  // namespace trainyard::model
