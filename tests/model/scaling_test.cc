// The speed model of data-parallel jobs (model/scaling.h): per-epoch statistical efficiency and
// the batch a job adapts to.
#include "model/scaling.h"

#include <gtest/gtest.h>

namespace trainyard::model {
namespace {

// Two epochs of equal progress: little gradient noise in the first (a larger batch buys almost
// nothing), much in the second (a batch twice as large makes almost twice the progress).
ScalingModel two_epoch_model() {
  ScalingModel m;
  m.coef = {0.1, 0.001, 0.0, 0.0, 0.0, 0.0};  // compute only: 0.1 s + 1 ms per sample
  m.max_local_batch = 1024;
  m.iterations = {{64, 1000}, {1024, 100}};
  m.replicas = 1;
  m.batch = 64;
  m.gpus_per_node = 4;
  m.min_local_batch = 16;
  m.stat_batches = {64, 1024};
  m.epochs = {{100, {{1.0, 0.001}, {1.0, 0.001}}}, {200, {{0.001, 1.0}, {0.001, 1.0}}}};
  m.prepare();
  return m;
}

TEST(ScalingModel, GainIsPolluxsStatisticalEfficiencyFormula) {
  const ScalingModel m = two_epoch_model();
  ASSERT_TRUE(m.has_epochs());
  // gain = (var + sqr) / (var / s + sqr), s = batch / 64.
  EXPECT_DOUBLE_EQ(m.gain(0, 64), 1.0);
  EXPECT_DOUBLE_EQ(m.gain(0, 256), (0.001 + 1.0) / (0.001 / 4 + 1.0));
  EXPECT_DOUBLE_EQ(m.gain(1, 256), (1.0 + 0.001) / (1.0 / 4 + 0.001));
}

TEST(ScalingModel, GradientStatisticsAreLinearBetweenProfiledBatches) {
  ScalingModel m = two_epoch_model();
  m.epochs[0].grad = {{1.0, 0.0}, {3.0, 2.0}};
  m.prepare();
  // Halfway between 64 and 1024: sqr 2, var 1, s = 544 / 64.
  const double s = 544.0 / 64;
  EXPECT_NEAR(m.gain(0, 544), (1.0 + 2.0) / (1.0 / s + 2.0), 1e-12);
  // Outside the profiled range: the nearest profiled batch's statistics.
  EXPECT_NEAR(m.gain(0, 2048), (2.0 + 3.0) / (2.0 / 32 + 3.0), 1e-12);
}

TEST(ScalingModel, EpochsHoldTheirShareOfTheWorkAtTheRequestedBatch) {
  const ScalingModel m = two_epoch_model();
  // At batch 64 (s = 1) both epochs need 100 progress at gain 1: half the work each.
  EXPECT_EQ(m.epoch_at(0.0), 0u);
  EXPECT_EQ(m.epoch_at(0.49), 0u);
  EXPECT_EQ(m.epoch_at(0.5), 1u);
  EXPECT_EQ(m.epoch_at(0.99), 1u);
  EXPECT_EQ(m.epoch_at(1.0), 1u);
}

TEST(ScalingModel, AnAdaptiveJobTakesALargerBatchOnceGradientsGetNoisy) {
  const ScalingModel m = two_epoch_model();
  const double early = m.adaptive_batch(0, 4, 1, 1.0);
  const double late = m.adaptive_batch(1, 4, 1, 1.0);
  EXPECT_LE(early, 64 * 1.01);  // the smallest allowed: max(64, 16 x 4 GPUs)
  EXPECT_GE(late, 1000);        // the largest profiled, 1024
  // Its speed in each epoch beats the requested batch's on the same GPUs, and the late epoch's
  // gain from the larger batch is large.
  EXPECT_GE(m.epoch_speed(0, 4, 1, early, 1.0), m.epoch_speed(0, 4, 1, 64, 1.0));
  EXPECT_GT(m.epoch_speed(1, 4, 1, late, 1.0), 3 * m.epoch_speed(1, 4, 1, 64, 1.0));
}

TEST(ScalingModel, PaceCoversTheRestOfTheRunEpochByEpoch) {
  const ScalingModel m = two_epoch_model();
  const auto adaptive = m.pace(0.25, 4, 1, 1.0, true);
  ASSERT_EQ(adaptive.size(), 2u);
  EXPECT_DOUBLE_EQ(adaptive[0].work_end, 0.5);
  EXPECT_DOUBLE_EQ(adaptive[1].work_end, 1.0);
  EXPECT_GT(adaptive[1].batch, adaptive[0].batch);
  EXPECT_GT(adaptive[1].speed, adaptive[0].speed);
  // From the second epoch on, one stretch; a fixed batch keeps its pace (the gain at the
  // requested batch is the reference's own).
  const auto fixed = m.pace(0.75, 4, 1, 1.0, false);
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_DOUBLE_EQ(fixed[0].batch, 64);
  EXPECT_NEAR(fixed[0].speed, m.speed(4, 1, 64, 1.0), 1e-12);
}

TEST(ScalingModel, OneReplicaAboveTheInitialBatchAccumulatesOverTwoSteps) {
  const ScalingModel m = two_epoch_model();
  // Local batch 128 fits one step (max 1024), but one replica above the initial 64 runs two
  // steps of 64: 2 x (0.1 + 0.064) s, where two replicas run one step each of 0.1 + 0.064 s.
  EXPECT_NEAR(m.step_seconds(1, 1, 128, 1.0), 2 * (0.1 + 0.064), 1e-12);
  EXPECT_NEAR(m.step_seconds(2, 1, 128, 1.0), 0.1 + 0.064, 1e-12);
  EXPECT_NEAR(m.step_seconds(1, 1, 64, 1.0), 0.1 + 0.064, 1e-12);
}

TEST(ScalingModel, WithoutEpochsTheWholeRunAverageIsUsed) {
  ScalingModel m = two_epoch_model();
  m.epochs.clear();
  m.prepare();
  EXPECT_FALSE(m.has_epochs());
  const auto p = m.pace(0.3, 2, 1, 1.0, false);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_DOUBLE_EQ(p[0].work_end, 1.0);
  EXPECT_NEAR(p[0].speed, m.speed(2, 1, 64, 1.0), 1e-12);
}

}  // namespace
}  // namespace trainyard::model
