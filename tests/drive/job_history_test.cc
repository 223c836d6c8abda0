// The rules both drivers use for a job's past in the scheduler's snapshot.
#include "drive/job_history.h"

#include <gtest/gtest.h>

namespace trainyard::drive {
namespace {

const util::Time kStart = util::kEpoch + util::seconds(1000);

TEST(JobHistory, AttainedServiceAddsTheRunningAttemptAtItsShare) {
  model::WorkerRequest worker;
  worker.gpus = 2;
  // 3 workers of 2 GPUs for 10 s on top of 50 GPU-seconds from ended attempts.
  EXPECT_EQ(attained_service(util::seconds(50), kStart, attempt_milli(worker, 3),
                             kStart + util::seconds(10)),
            util::seconds(110));
  model::WorkerRequest half;
  half.gpu_milli = model::GpuMilli(500);  // half a GPU
  EXPECT_EQ(attempt_milli(half, 4), 2000);
  EXPECT_EQ(attained_service(util::Duration(0), kStart, attempt_milli(half, 1),
                             kStart + util::seconds(8)),
            util::seconds(4));
}

TEST(JobHistory, AttemptLengthAndRemainingNeverGoNegative) {
  EXPECT_EQ(attempt_length(kStart, kStart + util::seconds(70)), util::seconds(70));
  EXPECT_EQ(attempt_length(kStart, kStart - util::seconds(1)), util::Duration(0));
  EXPECT_EQ(remaining(util::seconds(100), util::seconds(30)), util::seconds(70));
  EXPECT_EQ(remaining(util::seconds(100), util::seconds(130)), util::Duration(0));
}

}  // namespace
}  // namespace trainyard::drive
