// GPUs, CPU and memory that work outside the scheduler holds (jobs a batch system runs for
// others on a shared node) are never given out, and check_plan counts them as used.
#include <gtest/gtest.h>

#include "sched/invariants.h"
#include "sched/plan.h"
#include "tests/sched/snapshot_for_test.h"

namespace trainyard::sched {
namespace {

using testing::SnapshotForTest;

Plan plan_fifo(const Snapshot& snap) {
  PolicyConfig cfg;
  cfg.name = "fifo";
  return plan(snap, cfg);
}

TEST(HeldOutside, HeldGpusAreNotGivenOut) {
  auto snap = SnapshotForTest().node("n1", 2, "H100").pending(1, {.gpus = 2}).build();
  snap.nodes[0].gpus_held_outside = 0b10;  // GPU 1 is busy with someone else's job
  Plan p = plan_fifo(snap);
  EXPECT_TRUE(p.starts.empty()) << "a 2-GPU job must wait while one of two GPUs is held";

  auto one = SnapshotForTest().node("n1", 2, "H100").pending(1, {.gpus = 1}).build();
  one.nodes[0].gpus_held_outside = 0b10;
  Plan q = plan_fifo(one);
  ASSERT_EQ(q.starts.size(), 1u);
  ASSERT_EQ(q.starts[0].placement.size(), 1u);
  EXPECT_EQ(q.starts[0].placement[0].gpu_idx, 0) << "only GPU 0 is free";
  EXPECT_TRUE(check_plan(one, q, true).is_ok());
}

TEST(HeldOutside, CheckPlanRefusesAPlacementOnAHeldGpu) {
  auto snap = SnapshotForTest().node("n1", 2, "H100").pending(1, {.gpus = 1}).build();
  Plan p = plan_fifo(snap);
  ASSERT_EQ(p.starts.size(), 1u);
  const int gpu = p.starts[0].placement[0].gpu_idx;
  snap.nodes[0].gpus_held_outside = 1u << gpu;  // the same GPU now taken outside
  EXPECT_FALSE(check_plan(snap, p, true).is_ok());
}

TEST(HeldOutside, HeldCpusCount) {
  auto snap = SnapshotForTest().node("n1", 2, "H100").pending(1, {.gpus = 1, .cpu = 1}).build();
  snap.nodes[0].cpu_held_outside = snap.nodes[0].cpu;  // every CPU is taken
  Plan p = plan_fifo(snap);
  EXPECT_TRUE(p.starts.empty());
}

}  // namespace
}  // namespace trainyard::sched
