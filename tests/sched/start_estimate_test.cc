#include "sched/start_estimate.h"

#include <gtest/gtest.h>

#include "sched/gpu_holders.h"
#include "sched/invariants.h"
#include "sched/plan.h"
#include "tests/sched/snapshot_for_test.h"

namespace trainyard::sched {
namespace {

using testing::SnapshotForTest;

PolicyConfig policy(const std::string& name) {
  PolicyConfig cfg;
  cfg.name = name;
  cfg.min_runtime = Duration(0);
  return cfg;
}

struct Planned {
  Plan plan;
  std::vector<StartEstimate> estimates;
};

Planned plan_and_estimate(const Snapshot& snap, const PolicyConfig& cfg) {
  Planned out{.plan = plan(snap, cfg)};
  const util::Status ok = check_plan(snap, out.plan, true);
  EXPECT_TRUE(ok.is_ok()) << ok.to_string();
  out.estimates = estimate_starts(snap, out.plan, cfg);
  EXPECT_EQ(out.estimates.size(), out.plan.waiting.size());
  return out;
}

const StartEstimate& estimate_of(const Planned& p, int64_t id) {
  for (const StartEstimate& e : p.estimates) {
    if (e.job.value() == id) return e;
  }
  ADD_FAILURE() << "no estimate for job " << id;
  static const StartEstimate none;
  return none;
}

TEST(StartEstimate, PendingJobStartsWhenTheRunningJobsLimitEnds) {
  auto snap =
      SnapshotForTest()
          .now(600)
          .node("n1", 8, "H100")
          .running(1, {.gpus = 8, .runtime_limit = 3600}, {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}})
          .pending(2, {.gpus = 4, .submitted = 10})
          .build();
  const Planned p = plan_and_estimate(snap, policy("fifo"));
  const StartEstimate& e = estimate_of(p, 2);
  EXPECT_EQ(e.basis, EstimateBasis::Replay);
  EXPECT_EQ(e.at, util::from_seconds(3600));
  EXPECT_NE(e.why.find("job 1 ends by runtime limit"), std::string::npos) << e.why;
}

TEST(StartEstimate, LaterJobsWaitForThoseAheadInTheQueue) {
  auto snap =
      SnapshotForTest()
          .now(100)
          .node("n1", 8, "H100")
          .running(1, {.gpus = 8, .runtime_limit = 1000}, {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}})
          .pending(2, {.gpus = 8, .submitted = 10, .runtime_limit = 500})
          .pending(3, {.gpus = 8, .submitted = 20, .runtime_limit = 500})
          .build();
  const Planned p = plan_and_estimate(snap, policy("fifo"));
  EXPECT_EQ(estimate_of(p, 2).at, util::from_seconds(1000));
  EXPECT_EQ(estimate_of(p, 3).at, util::from_seconds(1500));
  EXPECT_NE(estimate_of(p, 3).why.find("job 2"), std::string::npos) << estimate_of(p, 3).why;
}

TEST(StartEstimate, UnknownWhenTheHolderHasNoRuntimeLimitAndSaysWhichJob) {
  auto snap = SnapshotForTest()
                  .now(100)
                  .node("n1", 8, "H100")
                  .running(1, {.gpus = 4, .runtime_limit = 1000}, {{"n1", {0, 1, 2, 3}}})
                  .running(7, {.gpus = 4}, {{"n1", {4, 5, 6, 7}}})
                  .pending(2, {.gpus = 8, .submitted = 10})
                  .build();
  const Planned p = plan_and_estimate(snap, policy("fifo"));
  const StartEstimate& e = estimate_of(p, 2);
  EXPECT_EQ(e.basis, EstimateBasis::Unknown);
  EXPECT_EQ(e.at, Time::max());
  EXPECT_NE(e.why.find("job 7"), std::string::npos) << e.why;
  EXPECT_EQ(e.why.find("job 1"), std::string::npos) << e.why;  // job 1 ends; it is not the cause
  EXPECT_NE(e.why.find("no runtime limit"), std::string::npos) << e.why;
}

TEST(StartEstimate, BackfillHeadGetsTheReservationsShadowTime) {
  auto snap = SnapshotForTest()
                  .now(0)
                  .node("n1", 8, "H100")
                  .running(1, {.gpus = 4, .runtime_limit = 3600}, {{"n1", {0, 1, 2, 3}}})
                  .running(2, {.gpus = 2, .runtime_limit = 7200}, {{"n1", {4, 5}}})
                  .pending(3, {.gpus = 8, .submitted = 10, .runtime_limit = 600})
                  .pending(4, {.gpus = 4, .submitted = 20, .runtime_limit = 9000})
                  .build();
  const Planned p = plan_and_estimate(snap, policy("backfill"));
  EXPECT_EQ(p.plan.reservation.job.value(), 3);
  EXPECT_EQ(p.plan.reservation.at, util::from_seconds(7200));
  const StartEstimate& head = estimate_of(p, 3);
  EXPECT_EQ(head.basis, EstimateBasis::Reservation);
  EXPECT_EQ(head.at, util::from_seconds(7200));
  // Job 4 would delay the head; it runs after it (7200 + 600).
  const StartEstimate& next = estimate_of(p, 4);
  EXPECT_EQ(next.basis, EstimateBasis::Replay);
  EXPECT_EQ(next.at, util::from_seconds(7800));
}

TEST(StartEstimate, PlanWithoutBackfillMakesNoReservation) {
  auto snap = SnapshotForTest()
                  .node("n1", 8, "H100")
                  .running(1, {.gpus = 8, .runtime_limit = 60}, {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}})
                  .pending(2, {.gpus = 8, .submitted = 10})
                  .build();
  const Planned p = plan_and_estimate(snap, policy("fifo"));
  EXPECT_EQ(p.plan.reservation.job, util::kNoJob);
  EXPECT_EQ(estimate_of(p, 2).basis, EstimateBasis::Replay);
}

TEST(StartEstimate, JobWaitingForVictimsStartsNowAfterThePreemption) {
  auto snap = SnapshotForTest()
                  .now(1000)
                  .node("n1", 4, "H100")
                  .running(1, {.gpus = 4, .priority = 0}, {{"n1", {0, 1, 2, 3}}})
                  .pending(2, {.gpus = 4, .priority = 100, .submitted = 500})
                  .build();
  const Planned p = plan_and_estimate(snap, policy("priority"));
  ASSERT_EQ(p.plan.preemptions.size(), 1u);
  const StartEstimate& e = estimate_of(p, 2);
  EXPECT_EQ(e.basis, EstimateBasis::Replay);
  EXPECT_EQ(e.at, util::from_seconds(1000));
  EXPECT_NE(e.why.find("preempting job 1"), std::string::npos) << e.why;
}

TEST(StartEstimate, DependencyAndNeverFitsAreUnknownWithTheirReason) {
  auto snap = SnapshotForTest()
                  .node("n1", 4, "H100")
                  .running(1, {.gpus = 4, .runtime_limit = 60}, {{"n1", {0, 1, 2, 3}}})
                  .pending(2, {.gpus = 1, .submitted = 10, .waiting_on = 1})
                  .pending(3, {.gpus = 16, .submitted = 20})
                  .build();
  const Planned p = plan_and_estimate(snap, policy("backfill"));
  EXPECT_EQ(estimate_of(p, 2).basis, EstimateBasis::Unknown);
  EXPECT_NE(estimate_of(p, 2).why.find("job 1 to succeed"), std::string::npos);
  EXPECT_EQ(estimate_of(p, 3).basis, EstimateBasis::Unknown);
  EXPECT_NE(estimate_of(p, 3).why.find("never"), std::string::npos);
}

TEST(StartEstimate, QuotaHeldByTheTeamsUnlimitedJobsIsNamed) {
  auto snap = SnapshotForTest()
                  .team("a", 1.0, "", 4, 0)
                  .node("n1", 8, "H100")
                  .running(1, {.gpus = 4, .team = "a"}, {{"n1", {0, 1, 2, 3}}})
                  .pending(2, {.gpus = 1, .team = "a", .submitted = 10})
                  .build();
  const Planned p = plan_and_estimate(snap, policy("fifo"));
  ASSERT_EQ(p.plan.waiting.size(), 1u);
  ASSERT_EQ(p.plan.waiting[0].code, WaitCode::QuotaExceeded);
  const StartEstimate& e = estimate_of(p, 2);
  EXPECT_EQ(e.basis, EstimateBasis::Unknown);
  EXPECT_NE(e.why.find("team's quota is held by job 1"), std::string::npos) << e.why;
}

TEST(StartEstimate, ReplansAreCappedAndLaterStartsStayUnknown) {
  SnapshotForTest b;
  b.now(0).node("n1", 1, "H100").running(1, {.gpus = 1, .runtime_limit = 10}, {{"n1", {0}}});
  for (int id = 2; id < 12; ++id)
    b.pending(id, {.gpus = 1, .submitted = 1.0 * id, .runtime_limit = 10});
  const Snapshot snap = b.build();
  const PolicyConfig cfg = policy("fifo");
  const Plan pl = plan(snap, cfg);
  const auto estimates = estimate_starts(snap, pl, cfg, {.max_replans = 3});
  ASSERT_EQ(estimates.size(), 10u);
  EXPECT_EQ(estimates[0].at, util::from_seconds(10));
  EXPECT_EQ(estimates[2].at, util::from_seconds(30));
  EXPECT_EQ(estimates[3].basis, EstimateBasis::Unknown);
  EXPECT_NE(estimates[3].why.find("later than"), std::string::npos) << estimates[3].why;
}

TEST(GpuHolders, NamesTheJobsOnUsableNodesSoonestEndFirst) {
  auto snap = SnapshotForTest()
                  .now(600)
                  .team("a")
                  .team("b")
                  .node("n1", 4, "H100-80GB")
                  .node("n2", 4, "A100-40GB")
                  .running(15, {.gpus = 2, .team = "b"}, {{"n1", {0, 1}}})
                  .running(12, {.gpus = 2, .team = "a", .runtime_limit = 1800}, {{"n1", {2, 3}}})
                  .running(20, {.gpus = 4, .team = "a"}, {{"n2", {0, 1, 2, 3}}})
                  .pending(30, {.gpus = 4, .team = "a", .submitted = 1, .models = {"H100-80GB"}})
                  .build();
  const Plan p = plan(snap, policy("fifo"));
  ASSERT_EQ(p.waiting.size(), 1u);
  EXPECT_TRUE(waits_for_gpus(p.waiting[0]));
  const std::string text = GpuHolders(snap, p).describe(util::JobId(30));
  EXPECT_EQ(text,
            "waiting for 4 x H100-80GB: held by job 12 (team a, 2 GPUs, limit ends in 20m), "
            "job 15 (team b, 2 GPUs, no runtime limit)");
}

TEST(GpuHolders, CountsGpusUsedOutsideAndCapsTheNames) {
  SnapshotForTest b;
  b.node("n1", 8, "H100");
  for (int id = 1; id <= 6; ++id) b.running(id, {.gpus = 1}, {{"n1", {id - 1}}});
  b.pending(9, {.gpus = 4, .submitted = 1});
  Snapshot snap = b.build();
  snap.nodes[0].gpus_held_outside = 0b1100'0000;
  const Plan p = plan(snap, policy("fifo"));
  const std::string text = GpuHolders(snap, p).describe(util::JobId(9), 2);
  EXPECT_NE(text.find("waiting for 4 x H100-80GB: held by job 1 (1 GPU, no runtime limit), job 2 "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("and 4 more job(s); 2 GPU(s) used outside trainyard"), std::string::npos)
      << text;
}

TEST(GpuHolders, FormatsSpans) {
  EXPECT_EQ(format_span(util::seconds(45)), "45s");
  EXPECT_EQ(format_span(util::seconds(20 * 60)), "20m");
  EXPECT_EQ(format_span(util::seconds(3900)), "1h05m");
  EXPECT_EQ(format_span(util::seconds(2 * 86400 + 3 * 3600)), "2d03h");
  EXPECT_EQ(format_span(util::seconds(-5)), "0s");
}

}  // namespace
}  // namespace trainyard::sched
