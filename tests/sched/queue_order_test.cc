// Queue order: Gittins indices against hand-computed values, Tiresias queue assignment with
// starvation promotion, the next decision time drivers wake up for, and id tie-breaks.
#include "sched/queue_order.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/sched/snapshot_for_test.h"

namespace trainyard::sched {
namespace {

using testing::JobOpts;
using testing::SnapshotForTest;

TEST(GittinsIndex, MatchesHandComputedValues) {
  const GittinsIndex g({100, 10000, 100, 100});  // unsorted on purpose
  // Attained 50, quantum 3150: all 4 samples exceed 50; 3 finish by 3200.
  // E[min(S-50, 3150)] = (3 x 50 + 3150) / 4 = 825; index = 0.75 / 825.
  EXPECT_DOUBLE_EQ(g.index(50, 3150), 0.75 / 825);
  // Attained 0, quantum 100: 3 of 4 finish; E[min(S, 100)] = 100; index = 0.75 / 100.
  EXPECT_DOUBLE_EQ(g.index(0, 100), 0.0075);
  // Attained 150: only 10000 remains, it does not finish within 3050: index 0.
  EXPECT_DOUBLE_EQ(g.index(150, 3050), 0.0);
  // An unbounded quantum: P = 1, E = mean = 10300 / 4.
  EXPECT_DOUBLE_EQ(g.index(0, 1e12), 4.0 / 10300);
  // Nothing exceeds the attained service: 0.
  EXPECT_DOUBLE_EQ(g.index(10000, 5), 0.0);
}

TEST(GittinsIndex, CountsSamplesAboveAttainedAndUpToQuantumEnd) {
  const GittinsIndex g({1, 2, 3, 4});
  // S > 1: {2, 3, 4}; finishing by 1 + 2 = 3 (inclusive): {2, 3}, P = 2/3.
  // E[min(S-1, 2)] = (1 + 2 + 2) / 3 = 5/3; index = (2/3) / (5/3) = 0.4.
  EXPECT_DOUBLE_EQ(g.index(1, 2), 0.4);
  // S > 4: none.
  EXPECT_DOUBLE_EQ(g.index(4, 10), 0.0);
  EXPECT_FALSE(g.empty());
  EXPECT_TRUE(GittinsIndex({}).empty());
}

TEST(GittinsIndex, PrefersJobsLikelyToFinishSoon) {
  // Bimodal prior: most jobs are short. A job past the short mode has a low index.
  const GittinsIndex g({10, 10, 10, 10, 5000});
  EXPECT_GT(g.index(0, 100), g.index(20, 80));
}

SnapshotJob job_with(double attained, bool running = false, double last_run = 0,
                     double queued_since = 0) {
  SnapshotJob j;
  j.attained_gpu_time = util::seconds_f(attained);
  j.phase = running ? JobPhase::Running : JobPhase::Pending;
  j.last_run = util::seconds_f(last_run);
  j.queued_since = util::from_seconds(queued_since);
  return j;
}

TEST(TiresiasQueue, ThresholdsAreLowerBoundsOfTheNextQueue) {
  const TiresiasConfig cfg;  // 3200, 25600
  const Time now = util::from_seconds(0);
  EXPECT_EQ(tiresias_queue(job_with(0), now, cfg), 0);
  EXPECT_EQ(tiresias_queue(job_with(3199.9), now, cfg), 0);
  EXPECT_EQ(tiresias_queue(job_with(3200), now, cfg), 1);
  EXPECT_EQ(tiresias_queue(job_with(25599), now, cfg), 1);
  EXPECT_EQ(tiresias_queue(job_with(25600), now, cfg), 2);
  EXPECT_EQ(tiresias_queue(job_with(1e9), now, cfg), 2);
}

TEST(TiresiasQueue, StarvedPendingJobIsPromotedToQueueZero) {
  TiresiasConfig cfg;  // starvation_factor 8
  const Time now = util::from_seconds(1000);
  // Last ran 100 s, queued since t=200: waited 800 = 8 x 100, promoted.
  EXPECT_EQ(tiresias_queue(job_with(30000, false, 100, 200), now, cfg), 0);
  // Queued since t=201: waited 799, not yet.
  EXPECT_EQ(tiresias_queue(job_with(30000, false, 100, 201), now, cfg), 2);
  // Running jobs and jobs that never ran are never promoted.
  EXPECT_EQ(tiresias_queue(job_with(30000, true, 100, 0), now, cfg), 2);
  EXPECT_EQ(tiresias_queue(job_with(30000, false, 0, 0), now, cfg), 2);
  cfg.starvation_factor = 0;  // off
  EXPECT_EQ(tiresias_queue(job_with(30000, false, 100, 0), now, cfg), 2);
}

PolicyConfig tiresias() {
  PolicyConfig cfg;
  cfg.name = "tiresias";
  return cfg;
}

TEST(NextDecisionTime, RunningJobCrossesItsNextThreshold) {
  // 2 GPUs, 1000 GPU-s attained: reaches 3200 after 2200 / 2 = 1100 s.
  auto b = SnapshotForTest().now(500).node("n1", 8, "H100");
  b.running(1, {.gpus = 2, .attained_gpu_seconds = 1000}, {{"n1", {0, 1}}});
  EXPECT_EQ(next_decision_time(b.build(), tiresias()), util::from_seconds(1600));
  // At exactly 3200 it already sits in queue 1; the next boundary is 25600: +11200 s.
  auto c = SnapshotForTest().now(0).node("n1", 8, "H100");
  c.running(1, {.gpus = 2, .attained_gpu_seconds = 3200}, {{"n1", {0, 1}}});
  EXPECT_EQ(next_decision_time(c.build(), tiresias()), util::from_seconds(11200));
}

TEST(NextDecisionTime, WaitingJobReachesStarvationLimitFirst) {
  auto b = SnapshotForTest().now(500).node("n1", 8, "H100");
  b.running(1, {.gpus = 2, .attained_gpu_seconds = 1000}, {{"n1", {0, 1}}});
  b.pending(2, {.attained_gpu_seconds = 30000});
  b.raw().jobs.back().last_run = util::seconds(100);
  b.raw().jobs.back().queued_since = util::from_seconds(0);
  // Job 2 starves at 0 + 8 x 100 = 800, before job 1 crosses 3200 at 1600.
  EXPECT_EQ(next_decision_time(b.build(), tiresias()), util::from_seconds(800));
}

TEST(NextDecisionTime, NoneWhenOrderChangesOnlyOnEvents) {
  auto b = SnapshotForTest().now(500).node("n1", 8, "H100");
  b.running(1, {.gpus = 2, .attained_gpu_seconds = 1000}, {{"n1", {0, 1}}});
  PolicyConfig fifo;
  fifo.name = "fifo";
  EXPECT_EQ(next_decision_time(b.build(), fifo), std::nullopt);
  // Past the last threshold, and an already starved job: nothing left to wait for.
  auto c = SnapshotForTest().now(5000).node("n1", 8, "H100");
  c.running(1, {.gpus = 2, .attained_gpu_seconds = 30000}, {{"n1", {0, 1}}});
  c.pending(2, {.attained_gpu_seconds = 30000});
  c.raw().jobs.back().last_run = util::seconds(100);
  EXPECT_EQ(next_decision_time(c.build(), tiresias()), std::nullopt);
}

TEST(NextDecisionTime, AMinimumRunTimeEndingWhileJobsWaitIsADecisionTime) {
  // Job 1 started at 400: under a preemptive policy it may be preempted from 400 + 300 s on.
  auto b = SnapshotForTest().now(500).node("n1", 8, "H100");
  b.running(1, {.gpus = 8}, {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}});
  b.raw().jobs.back().started = util::from_seconds(400);
  b.pending(2, {.gpus = 8, .priority = 1000});
  PolicyConfig priority;
  priority.name = "priority";
  EXPECT_EQ(next_decision_time(b.build(), priority), util::from_seconds(700));
  // Not for a job that may not be preempted, nor with nothing waiting, nor under a policy that
  // never preempts, nor with no minimum run time.
  auto c = b;
  c.raw().jobs.front().preemptible = false;
  EXPECT_EQ(next_decision_time(c.build(), priority), std::nullopt);
  auto d = SnapshotForTest().now(500).node("n1", 8, "H100");
  d.running(1, {.gpus = 8}, {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}});
  d.raw().jobs.back().started = util::from_seconds(400);
  EXPECT_EQ(next_decision_time(d.build(), priority), std::nullopt);
  PolicyConfig backfill;
  backfill.name = "backfill";
  EXPECT_EQ(next_decision_time(b.build(), backfill), std::nullopt);
  priority.min_runtime = util::Duration(0);
  EXPECT_EQ(next_decision_time(b.build(), priority), std::nullopt);
}

// Under priority, a protection's end counts only when a waiting job has a higher priority
// than that job, so only then may it preempt it; other rules keep every end.
TEST(NextDecisionTime, UnderPriorityAMinimumRunTimeEndCountsOnlyForAJobAWaitingJobOutranks) {
  auto b = SnapshotForTest().now(500).node("n1", 8, "H100");
  b.running(1, {.gpus = 4, .priority = 10}, {{"n1", {0, 1, 2, 3}}});
  b.raw().jobs.back().started = util::from_seconds(400);
  b.running(2, {.gpus = 4}, {{"n1", {4, 5, 6, 7}}});
  b.raw().jobs.back().started = util::from_seconds(450);
  b.pending(3, {.gpus = 8, .priority = 5});
  PolicyConfig priority;
  priority.name = "priority";
  // Job 3 (priority 5) outranks job 2 (0), not job 1 (10): job 2's end at 750, not job 1's 700.
  EXPECT_EQ(next_decision_time(b.build(), priority), util::from_seconds(750));
  PolicyConfig srtf;
  srtf.name = "srtf";
  EXPECT_EQ(next_decision_time(b.build(), srtf), util::from_seconds(700));
  auto c = b;
  c.raw().jobs.back().priority = 0;
  EXPECT_EQ(next_decision_time(c.build(), priority), std::nullopt);
}

TEST(RankJobs, TiesBreakBySubmitTimeThenIdNotVectorOrder) {
  auto b = SnapshotForTest().node("n1", 8, "H100");
  b.pending(9, {.submitted = 5}).pending(4, {.submitted = 5}).pending(7, {.submitted = 1});
  const Snapshot snap = b.build();
  PolicyConfig cfg;
  const std::vector<int> order = rank_jobs(snap, cfg, QueueOrderKind::Arrival, false);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(snap.jobs[order[0]].id.value(), 7);
  EXPECT_EQ(snap.jobs[order[1]].id.value(), 4);
  EXPECT_EQ(snap.jobs[order[2]].id.value(), 9);
}

// The driver's arrival-order hint only saves time: with it, remaining-time and priority orders
// with many distinct keys (large, negative, equal) rank exactly as the full sort without it,
// and a wrong hint is noticed.
TEST(RankJobs, ArrivalOrderHintGivesTheSameRanking) {
  std::mt19937_64 rng(7);
  auto b = SnapshotForTest().node("n1", 8, "H100");
  for (int id = 1; id <= 3000; ++id) {
    b.pending(id * 7919 % 3001, {.submitted = static_cast<double>(rng() % 50)});
  }
  Snapshot snap = b.build();
  for (SnapshotJob& job : snap.jobs) {
    const uint64_t r = rng();
    job.remaining = Duration(r % 4 == 0 ? int64_t{3600} : static_cast<int64_t>(r >> 20));
    job.priority = static_cast<int>(rng() % 2001) - 1000;
    if (r % 8 == 1) job.phase = JobPhase::Running;
  }
  std::vector<int32_t> arrival(snap.jobs.size());
  std::iota(arrival.begin(), arrival.end(), 0);
  std::sort(arrival.begin(), arrival.end(), [&](int32_t x, int32_t y) {
    const SnapshotJob& a = snap.jobs[x];
    const SnapshotJob& c = snap.jobs[y];
    return a.submitted != c.submitted ? a.submitted < c.submitted : a.id < c.id;
  });
  const PolicyConfig cfg;
  for (QueueOrderKind order : {QueueOrderKind::RemainingTime, QueueOrderKind::Priority,
                               QueueOrderKind::Arrival, QueueOrderKind::Tiresias}) {
    for (bool include_running : {false, true}) {
      snap.arrival_order.clear();
      const std::vector<int> sorted = rank_jobs(snap, cfg, order, include_running);
      snap.arrival_order = arrival;
      EXPECT_EQ(rank_jobs(snap, cfg, order, include_running), sorted)
          << static_cast<int>(order) << " " << include_running;
      // A wrong hint (out of order near the end) costs time, not correctness.
      std::swap(snap.arrival_order[2990], snap.arrival_order[2995]);
      EXPECT_EQ(rank_jobs(snap, cfg, order, include_running), sorted);
      snap.arrival_order.back() = 1 << 30;
      EXPECT_EQ(rank_jobs(snap, cfg, order, include_running), sorted);
    }
  }
}

}  // namespace
}  // namespace trainyard::sched
