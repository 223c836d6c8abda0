#include "sched/plan.h"

#include <gtest/gtest.h>

#include "sched/invariants.h"
#include "sched/placement.h"
#include "tests/sched/snapshot_for_test.h"

namespace trainyard::sched {
namespace {

using testing::JobOpts;
using testing::On;
using testing::SnapshotForTest;

Plan checked_plan(const Snapshot& snap, const std::string& policy) {
  PolicyConfig cfg;
  cfg.name = policy;
  cfg.min_runtime = Duration(0);  // victims here started at t=0 = now
  Plan p = plan(snap, cfg);
  auto ok = check_plan(snap, p, true);
  EXPECT_TRUE(ok.is_ok()) << ok.to_string();
  return p;
}

const WaitReason* reason_for(const Plan& p, int64_t id) {
  for (const auto& w : p.waiting) {
    if (w.job.value() == id) return &w;
  }
  return nullptr;
}

TEST(Scheduler, FifoBlocksBehindHeadOfLine) {
  auto snap = SnapshotForTest()
                  .node("n1", 8, "H100")
                  .running(1, {.gpus = 6}, {{"n1", {0, 1, 2, 3, 4, 5}}})
                  .pending(2, {.gpus = 4, .submitted = 1})
                  .pending(3, {.gpus = 1, .submitted = 2})
                  .build();
  Plan p = checked_plan(snap, "fifo");
  EXPECT_TRUE(p.starts.empty());
  ASSERT_NE(reason_for(p, 3), nullptr);
  EXPECT_EQ(reason_for(p, 3)->code, WaitCode::HeadOfLine);
  EXPECT_EQ(reason_for(p, 3)->arg, 2);
  EXPECT_EQ(reason_for(p, 2)->code, WaitCode::NoCapacityNow);
}

TEST(Scheduler, BackfillStartsShortJobThatEndsBeforeReservation) {
  auto snap = SnapshotForTest()
                  .now(0)
                  .node("n1", 8, "H100")
                  .running(1, {.gpus = 6, .runtime_limit = 3600}, {{"n1", {0, 1, 2, 3, 4, 5}}})
                  .pending(2, {.gpus = 8, .submitted = 1, .runtime_limit = 3600})
                  .pending(3, {.gpus = 1, .submitted = 2, .runtime_limit = 600})
                  .pending(4, {.gpus = 1, .submitted = 3, .runtime_limit = 7200})
                  .build();
  Plan p = checked_plan(snap, "backfill");
  // Job 2 needs the whole node, so it reserves both free GPUs until job 1's limit. Job 3 ends
  // before that and may use a reserved GPU; job 4 would delay job 2.
  ASSERT_EQ(p.starts.size(), 1u);
  EXPECT_EQ(p.starts[0].job.value(), 3);
  EXPECT_EQ(reason_for(p, 4)->code, WaitCode::BackfillWouldDelay);
  EXPECT_EQ(reason_for(p, 4)->arg, 2);
}

TEST(Scheduler, GangStartsWholeOnFewestNodes) {
  auto snap = SnapshotForTest()
                  .node("a", 8, "A100-80GB")
                  .node("b", 8, "A100-80GB")
                  .node("c", 8, "A100-80GB")
                  .running(1, {.gpus = 4}, {{"c", {0, 1, 2, 3}}})
                  .pending(2, {.gpus = 4, .workers = 3})
                  .build();
  Plan p = checked_plan(snap, "fifo");
  ASSERT_EQ(p.starts.size(), 1u);
  std::set<int> nodes;
  for (const auto& a : p.starts[0].placement) nodes.insert(a.node_idx);
  EXPECT_EQ(nodes.size(), 2u);  // one full node + the half-used one (best fit), not three
  EXPECT_TRUE(nodes.contains(2));
}

TEST(Scheduler, PriorityPreemptsLowerClassOnly) {
  auto snap = SnapshotForTest()
                  .node("n1", 4, "L4")
                  .running(1, {.gpus = 2, .priority = 0}, {{"n1", {0, 1}}})
                  .running(2, {.gpus = 2, .priority = 100}, {{"n1", {2, 3}}})
                  .pending(3, {.gpus = 2, .priority = 100, .submitted = 5})
                  .build();
  Plan p = checked_plan(snap, "priority");
  ASSERT_EQ(p.preemptions.size(), 1u);
  EXPECT_EQ(p.preemptions[0].job.value(), 1);
  EXPECT_EQ(p.preemptions[0].for_job.value(), 3);
  EXPECT_EQ(reason_for(p, 3)->code, WaitCode::AwaitingVictims);
  EXPECT_TRUE(p.starts.empty());
}

TEST(Scheduler, CapacityPromisedToOneBeneficiaryIsNotCountedTwice) {
  // Job 2 preempts job 1 and counts on its 6 GPUs plus the 2 free ones. Job 3, ranked next,
  // must not wait on the same GPUs: nothing is left for it this cycle.
  auto snap = SnapshotForTest()
                  .node("n1", 8, "H100")
                  .running(1, {.gpus = 6, .priority = 0}, {{"n1", {0, 1, 2, 3, 4, 5}}})
                  .pending(2, {.gpus = 8, .priority = 100, .submitted = 1})
                  .pending(3, {.gpus = 6, .priority = 100, .submitted = 2})
                  .build();
  Plan p = checked_plan(snap, "priority");
  ASSERT_EQ(p.preemptions.size(), 1u);
  EXPECT_EQ(reason_for(p, 2)->code, WaitCode::AwaitingVictims);
  EXPECT_EQ(reason_for(p, 3)->code, WaitCode::NoCapacityNow);
  // Next cycle, job 1 is in its grace period: job 2 still counts on it, job 3 still waits.
  Snapshot next = snap;
  next.jobs[0].phase = JobPhase::Preempting;
  Plan q = checked_plan(next, "priority");
  EXPECT_TRUE(q.preemptions.empty());
  EXPECT_EQ(reason_for(q, 2)->code, WaitCode::AwaitingVictims);
  EXPECT_EQ(reason_for(q, 2)->arg, 0);
  EXPECT_EQ(reason_for(q, 3)->code, WaitCode::NoCapacityNow);
}

TEST(Scheduler, NeverFitsDoesNotBlockFifo) {
  auto snap = SnapshotForTest()
                  .node("n1", 4, "T4")
                  .pending(1, {.gpus = 8})
                  .pending(2, {.gpus = 1, .submitted = 1, .models = {"H100-80GB"}})
                  .pending(3, {.gpus = 2, .submitted = 2})
                  .build();
  Plan p = checked_plan(snap, "fifo");
  EXPECT_EQ(reason_for(p, 1)->code, WaitCode::NeverFits);
  EXPECT_EQ(reason_for(p, 2)->code, WaitCode::NeverFits);
  ASSERT_EQ(p.starts.size(), 1u);
  EXPECT_EQ(p.starts[0].job.value(), 3);
  EXPECT_NE(describe(*reason_for(p, 2), snap).find("GPU model"), std::string::npos);
}

TEST(Scheduler, MigAndFractionalShareGpusWithoutOverlap) {
  auto snap = SnapshotForTest()
                  .node("mig", 1, "H100-80GB", {.mig = true})
                  .node("frac", 1, "T4")
                  .pending(1, {.mig = "3g.40gb"})
                  .pending(2, {.mig = "3g.40gb", .submitted = 1})
                  .pending(3, {.mig = "1g.10gb", .submitted = 2})
                  .pending(4, {.milli = 600, .submitted = 3})
                  .pending(5, {.milli = 400, .submitted = 4})
                  .pending(6, {.milli = 100, .submitted = 5})
                  .build();
  Plan p = checked_plan(snap, "backfill");
  // Two 3g.40gb fill the 8 memory slices; the 1g.10gb waits. 600m + 400m fill the T4.
  ASSERT_EQ(p.starts.size(), 4u);
  EXPECT_EQ(reason_for(p, 3)->code, WaitCode::NoCapacityNow);
  EXPECT_EQ(reason_for(p, 3)->filter, kFilterMig);
  EXPECT_NE(reason_for(p, 6), nullptr);
}

TEST(Scheduler, QuotaHoldsTeamAtNominalPlusBorrowable) {
  auto snap = SnapshotForTest()
                  .node("n1", 8, "H100")
                  .team("a", 1, "c", 2, 1)
                  .team("b", 1, "c", 6)
                  .pending(1, {.gpus = 4, .team = "a"})
                  .pending(2, {.gpus = 3, .team = "a", .submitted = 1})
                  .build();
  Plan p = checked_plan(snap, "backfill");
  ASSERT_EQ(p.starts.size(), 1u);
  EXPECT_EQ(p.starts[0].job.value(), 2);  // 3 = 2 nominal + 1 borrowed
  EXPECT_EQ(reason_for(p, 1)->code, WaitCode::QuotaExceeded);
}

TEST(Scheduler, SamePlanForSameSnapshot) {
  auto b = SnapshotForTest().node("a", 8, "H100").node("b", 8, "H100");
  for (int i = 0; i < 20; ++i) b.pending(i + 1, {.gpus = 1 + i % 3, .submitted = double(i)});
  const Snapshot snap = b.build();
  for (const char* policy : {"fifo", "backfill", "srtf", "tiresias", "fair", "priority"}) {
    PolicyConfig cfg;
    cfg.name = policy;
    const Plan p1 = plan(snap, cfg, 7);
    const Plan p2 = plan(snap, cfg, 7);
    ASSERT_EQ(p1.starts.size(), p2.starts.size()) << policy;
    for (size_t i = 0; i < p1.starts.size(); ++i) {
      EXPECT_EQ(p1.starts[i].job, p2.starts[i].job);
      EXPECT_EQ(p1.starts[i].placement, p2.starts[i].placement);
    }
  }
}

}  // namespace
}  // namespace trainyard::sched

namespace trainyard::sched {
namespace {

TEST(Scheduler, CheckPlanRefusesPreemptingAJobYoungerThanTheMinimumRunTime) {
  auto snap = SnapshotForTest()
                  .node("n1", 4, "L4")
                  .running(1, {.gpus = 4, .priority = 0}, {{"n1", {0, 1, 2, 3}}})
                  .pending(2, {.gpus = 4, .priority = 100, .submitted = 5})
                  .build();
  snap.now = util::from_seconds(100);  // job 1 started at 0: it has run 100 s
  PolicyConfig cfg;
  cfg.name = "priority";
  cfg.min_runtime = Duration(0);
  const Plan p = plan(snap, cfg);
  ASSERT_EQ(p.preemptions.size(), 1u);
  EXPECT_TRUE(check_plan(snap, p, true, util::seconds(100)).is_ok());
  const util::Status young = check_plan(snap, p, true, util::seconds(101));
  ASSERT_FALSE(young.is_ok());
  EXPECT_NE(young.message().find("before the minimum run time of 101 s"), std::string::npos)
      << young.message();
  // And plan() itself keeps the rule.
  cfg.min_runtime = util::seconds(101);
  EXPECT_TRUE(plan(snap, cfg).preemptions.empty());
}

}  // namespace
}  // namespace trainyard::sched
