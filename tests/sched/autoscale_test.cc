// The autoscaler through plan(): what it buys for pending gangs (no more than they need, not
// past pool maxima or team budgets, spot only for preemptible jobs), what it releases, and
// Young's checkpoint interval.
#include "sched/autoscale.h"

#include <gtest/gtest.h>

#include "sched/invariants.h"
#include "sched/placement.h"
#include "sched/plan.h"
#include "tests/sched/snapshot_for_test.h"

namespace trainyard::sched {
namespace {

using testing::JobOpts;
using testing::NodeOpts;
using testing::On;
using testing::SnapshotForTest;

constexpr double kNow = 100000;

struct PoolOpts {
  model::PoolKind kind = model::PoolKind::OnDemand;
  int gpus = 8;
  int min = 0;
  int max = 10;
  double price = 10;
  int priority = 0;
  double idle = 600;
  std::vector<std::string> zones;
  bool autoscaled = true;
};

model::Pool pool(const std::string& name, const PoolOpts& o = {}) {
  model::Pool p;
  p.name = name;
  p.kind = o.kind;
  p.gpu_model = "H100";
  p.gpus_per_node = o.gpus;
  p.min_nodes = o.min;
  p.max_nodes = o.max;
  p.price_per_node_hour = o.price;
  p.priority = o.priority;
  p.idle_timeout_seconds = o.idle;
  p.zones = o.zones;
  p.autoscaled = o.autoscaled;
  p.cpu = model::CpuMilli(64000);
  p.memory = model::gib(512);
  return p;
}

Plan checked_plan(const Snapshot& snap, const AutoscaleConfig& autoscale = {}) {
  PolicyConfig cfg;
  cfg.name = "fifo";
  cfg.autoscale = autoscale;
  Plan p = plan(snap, cfg);
  auto ok = check_plan(snap, p, true);
  EXPECT_TRUE(ok.is_ok()) << ok.to_string();
  return p;
}

const WaitReason& reason_for(const Plan& p, int64_t id) {
  for (const auto& w : p.waiting) {
    if (w.job.value() == id) return w;
  }
  ADD_FAILURE() << "no wait reason for job " << id;
  static const WaitReason kNone{};
  return kNone;
}

struct Up {
  int pool, zone, nodes;
  int64_t for_job;
  bool operator==(const Up&) const = default;
};

std::vector<Up> ups(const Plan& p) {
  std::vector<Up> out;
  for (const auto& s : p.scale_ups) out.push_back({s.pool, s.zone, s.nodes, s.for_job.value()});
  return out;
}

std::vector<int> released(const Plan& p) {
  std::vector<int> out;
  for (const auto& r : p.releases) out.push_back(r.node_idx);
  return out;
}

void expect_awaiting(const Plan& p, int64_t id, int pool_idx) {
  const WaitReason& w = reason_for(p, id);
  EXPECT_EQ(w.stage, Stage::Autoscale) << "job " << id;
  EXPECT_EQ(w.code, WaitCode::AwaitingNodes) << "job " << id;
  EXPECT_EQ(w.arg, pool_idx) << "job " << id;
}

TEST(Autoscale, BuysTheNodesThePendingGangsNeedAndNoMore) {
  auto snap = SnapshotForTest()
                  .now(kNow)
                  .pool(pool("h100"))
                  .pending(1, {.gpus = 4, .submitted = 1})
                  .pending(2, {.gpus = 4, .submitted = 2})
                  .pending(3, {.gpus = 2, .submitted = 3})
                  .build();
  const Plan p = checked_plan(snap);
  // Jobs 1 and 2 share one node, job 3 takes a second: two nodes, not one per job.
  EXPECT_EQ(ups(p), (std::vector<Up>{{0, -1, 2, 1}}));
  for (int64_t id : {1, 2, 3}) expect_awaiting(p, id, 0);
  EXPECT_EQ(describe(reason_for(p, 1), snap),
            "autoscale: nodes of pool h100 are being provisioned for it; it starts when they are "
            "up");
}

TEST(Autoscale, ProvisioningNodesAbsorbDemandBeforeBuying) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("h100"))
               .pending(1, {.gpus = 4, .submitted = 1})
               .pending(2, {.gpus = 4, .submitted = 2})
               .pending(3, {.gpus = 2, .workers = 2, .submitted = 3});
  b.raw().pools[0].provisioning = 1;
  const Plan p = checked_plan(b.build());
  // Jobs 1 and 2 fill the node already coming; only job 3 needs a new one.
  EXPECT_EQ(ups(p), (std::vector<Up>{{0, -1, 1, 3}}));
  for (int64_t id : {1, 2, 3}) expect_awaiting(p, id, 0);
}

TEST(Autoscale, NeverBuysPastPoolMaximum) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("h100", {.max = 2}))
               .node("n1", 8, "H100", {.pool = "h100"})
               .running(1, {.gpus = 8}, {{"n1", {0, 1, 2, 3, 4, 5, 6, 7}}})
               .pending(2, {.gpus = 8, .workers = 2, .submitted = 1})
               .pending(3, {.gpus = 8, .submitted = 2});
  b.raw().pools[0].ready = 1;
  const Plan p = checked_plan(b.build());
  // One node of headroom: job 2's gang needs two, so it gets none; job 3 gets the one.
  EXPECT_EQ(ups(p), (std::vector<Up>{{0, -1, 1, 3}}));
  EXPECT_EQ(reason_for(p, 2).stage, Stage::Placement);
  expect_awaiting(p, 3, 0);
}

TEST(Autoscale, NeverBuysPastTeamBudget) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("h100", {.price = 10}))
               .team("research")
               .pending(1, {.gpus = 8, .team = "research", .submitted = 1})
               .pending(2, {.gpus = 8, .team = "research", .submitted = 2})
               .pending(3, {.gpus = 8, .submitted = 3});
  b.raw().teams[0].budget_left = 15;  // one node-hour at $10, not two
  const Plan p = checked_plan(b.build());
  EXPECT_EQ(ups(p), (std::vector<Up>{{0, -1, 2, 1}}));
  expect_awaiting(p, 1, 0);
  EXPECT_EQ(reason_for(p, 2).code, WaitCode::NeverFits);
  expect_awaiting(p, 3, 0);  // no team, no budget
}

TEST(Autoscale, TeamWithoutBudgetWaitsAtAdmissionEvenWithFreeGpus) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("h100"))
               .node("n1", 8, "H100", {.pool = "h100"})
               .team("research")
               .pending(1, {.gpus = 4, .team = "research"});
  b.raw().pools[0].ready = 1;
  b.raw().teams[0].budget_left = 0;
  const Snapshot snap = b.build();
  const Plan p = checked_plan(snap);
  EXPECT_TRUE(p.starts.empty());
  EXPECT_TRUE(p.scale_ups.empty());
  const WaitReason& w = reason_for(p, 1);
  EXPECT_EQ(w.stage, Stage::Admission);
  EXPECT_EQ(w.code, WaitCode::BudgetExhausted);
  EXPECT_EQ(describe(w, snap),
            "admission: team research spent its budget for this period; it starts when the "
            "period renews or the team's budget_usd is raised");
}

TEST(Autoscale, ReleasesIdleNodesAfterTheTimeoutOnly) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("h100", {.idle = 600}))
               .node("n1", 8, "H100", {.pool = "h100"})
               .node("n2", 8, "H100", {.pool = "h100"})
               .node("n3", 8, "H100", {.pool = "h100"})
               .running(1, {.gpus = 1}, {{"n3", {0}}});
  Snapshot& s = b.raw();
  s.pools[0].ready = 3;
  s.nodes[0].idle_since = s.now - util::seconds(600);  // exactly the timeout
  s.nodes[1].idle_since = s.now - util::seconds(599);
  s.nodes[2].idle_since = s.now - util::seconds(5000);  // stale, but a job holds it
  const Plan p = checked_plan(b.build());
  EXPECT_EQ(released(p), (std::vector<int>{0}));
  EXPECT_TRUE(p.scale_ups.empty());
}

TEST(Autoscale, AGangThatNeedsMoreNodesThanAreIdleBuysOnlyTheDifferenceAndKeepsTheIdleOnes) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("h100", {.idle = 600}))
               .node("n1", 8, "H100", {.pool = "h100"})
               .pending(1, {.gpus = 8, .workers = 3});
  Snapshot& s = b.raw();
  s.pools[0].ready = 1;
  s.nodes[0].idle_since = s.now - util::seconds(3600);  // long idle, but the gang needs it
  const Plan p = checked_plan(b.build());
  EXPECT_EQ(ups(p), (std::vector<Up>{{0, -1, 2, 1}}));
  EXPECT_TRUE(released(p).empty());
  expect_awaiting(p, 1, 0);
}

TEST(Autoscale, KeepsMinNodesWhenReleasing) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("h100", {.min = 2}))
               .node("n1", 8, "H100", {.pool = "h100"})
               .node("n2", 8, "H100", {.pool = "h100"})
               .node("n3", 8, "H100", {.pool = "h100"});
  Snapshot& s = b.raw();
  s.pools[0].ready = 3;
  for (auto& n : s.nodes) n.idle_since = s.now - util::seconds(3600);
  const Plan p = checked_plan(b.build());
  EXPECT_EQ(released(p), (std::vector<int>{0}));
}

TEST(Autoscale, TopsPoolUpToMinNodesAndPacksDemandOntoThem) {
  auto snap =
      SnapshotForTest()
          .now(kNow)
          .pool(pool("idle", {.min = 2}))
          .pool(pool("busy", {.min = 1}))
          .pending(1, {.gpus = 8, .models = {"H100"}, .selector = {{"trainyard.dev/pool", "busy"}}})
          .build();
  const Plan p = checked_plan(snap);
  EXPECT_EQ(ups(p), (std::vector<Up>{{0, -1, 2, -1}, {1, -1, 1, 1}}));
  expect_awaiting(p, 1, 1);
}

TEST(Autoscale, NonPreemptibleJobNeverGetsSpot) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("spot", {.kind = model::PoolKind::Spot, .price = 3, .priority = 5}))
               .pool(pool("od", {.price = 10}))
               .node("s1", 8, "H100", {.pool = "spot"})
               .pending(1, {.gpus = 4, .preemptible = false});
  b.raw().pools[0].ready = 1;
  const Plan p = checked_plan(b.build());
  EXPECT_TRUE(p.starts.empty());  // s1 is free but spot
  EXPECT_EQ(ups(p), (std::vector<Up>{{1, -1, 1, 1}}));
  expect_awaiting(p, 1, 1);
}

TEST(Autoscale, SpotFilterExplainsWhyANonPreemptibleJobWaits) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("spot", {.kind = model::PoolKind::Spot, .max = 1}))
               .node("s1", 8, "H100", {.pool = "spot"})
               .pending(1, {.gpus = 4, .preemptible = false, .submitted = 1})
               .pending(2, {.gpus = 4, .submitted = 2});
  b.raw().pools[0].ready = 1;
  const Snapshot snap = b.build();
  const Plan p = checked_plan(snap);
  ASSERT_EQ(p.starts.size(), 1u);
  EXPECT_EQ(p.starts[0].job.value(), 2);  // the preemptible job may use spot
  const WaitReason& w = reason_for(p, 1);
  EXPECT_EQ(w.code, WaitCode::NeverFits);
  EXPECT_EQ(w.filter, kFilterSpot);
  EXPECT_NE(describe(w, snap).find("not preemptible"), std::string::npos) << describe(w, snap);
  EXPECT_TRUE(p.scale_ups.empty());
}

TEST(Autoscale, InvariantsRejectNonPreemptibleJobOnSpot) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("spot", {.kind = model::PoolKind::Spot}))
               .node("s1", 8, "H100", {.pool = "spot"})
               .pending(1, {.gpus = 1, .preemptible = false});
  const Snapshot snap = b.build();
  Plan bad;
  bad.starts.push_back(
      {util::JobId(1), {{.worker = 0, .node_idx = 0, .gpu_idx = 0, .milli = 1000}}});
  EXPECT_FALSE(check_plan(snap, bad, true).is_ok());
  Plan too_many;
  too_many.scale_ups.push_back({.pool = 0, .zone = -1, .nodes = 11, .for_job = util::JobId(1)});
  EXPECT_FALSE(check_plan(snap, too_many, true).is_ok());
}

Snapshot spot_and_on_demand(double waited, bool spot_unavailable) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("od", {.price = 8}))
               .pool(pool("spot", {.kind = model::PoolKind::Spot, .price = 9}))
               .pending(1, {.gpus = 8, .submitted = kNow - waited});
  if (spot_unavailable) b.raw().pools[1].unavailable_until = b.raw().now + util::seconds(60);
  return b.build();
}

TEST(Autoscale, PreemptibleJobGetsSpotFirstEvenWhenOnDemandIsCheaper) {
  const Plan p = checked_plan(spot_and_on_demand(0, false));
  EXPECT_EQ(ups(p), (std::vector<Up>{{1, -1, 1, 1}}));
}

TEST(Autoscale, PreemptibleJobGetsOnDemandWhileSpotIsUnavailable) {
  const Plan p = checked_plan(spot_and_on_demand(0, true));
  EXPECT_EQ(ups(p), (std::vector<Up>{{0, -1, 1, 1}}));
}

TEST(Autoscale, OnDemandOnlyAfterFallbackWaitWhenSpotIsThereButUnaffordable) {
  // Spot costs $30 an hour here and the team has $20: spot could serve the job, so on demand
  // ($10) is bought only once the job has waited spot_fallback_wait.
  auto make = [](double waited) {
    auto b = SnapshotForTest()
                 .now(kNow)
                 .pool(pool("spot", {.kind = model::PoolKind::Spot, .price = 30}))
                 .pool(pool("od", {.price = 10}))
                 .team("research")
                 .pending(1, {.gpus = 8, .team = "research", .submitted = kNow - waited});
    b.raw().teams[0].budget_left = 20;
    return b.build();
  };
  EXPECT_TRUE(checked_plan(make(599)).scale_ups.empty());
  EXPECT_EQ(ups(checked_plan(make(600))), (std::vector<Up>{{1, -1, 1, 1}}));
}

TEST(Autoscale, MovesAwayFromZonesBackingOffAndPicksTheFirstToReopenWhenAllAre) {
  auto b = SnapshotForTest()
               .now(kNow)
               .pool(pool("b", {.zones = {"z1", "z2", "z3"}}))
               .pending(1, {.gpus = 8});
  Snapshot& s = b.raw();
  s.pools[0].zones[0].blocked_until = s.now + util::seconds(1);
  s.pools[0].zones[1].blocked_until = s.now;  // blocked until now: open again
  EXPECT_EQ(ups(checked_plan(b.build())), (std::vector<Up>{{0, 1, 1, 1}}));

  // Every zone backing off: still spot, in the zone whose back-off ends first (z3).
  auto all = SnapshotForTest()
                 .now(kNow)
                 .pool(pool("b", {.zones = {"z1", "z2", "z3"}}))
                 .pending(1, {.gpus = 8});
  Snapshot& t = all.raw();
  t.pools[0].zones[0].blocked_until = t.now + util::seconds(30);
  t.pools[0].zones[1].blocked_until = t.now + util::seconds(20);
  t.pools[0].zones[2].blocked_until = t.now + util::seconds(10);
  EXPECT_EQ(ups(checked_plan(all.build())), (std::vector<Up>{{0, 2, 1, 1}}));
}

TEST(Autoscale, PrefersHigherPriorityThenTheCheapestNodesForTheGang) {
  auto with_job = [](int gpus) {
    return SnapshotForTest()
        .now(kNow)
        .pool(pool("big", {.gpus = 8, .price = 40}))    // $5 per GPU-hour
        .pool(pool("small", {.gpus = 4, .price = 24}))  // $6 per GPU-hour
        .pool(pool("low", {.gpus = 4, .price = 1, .priority = -1}))
        .pending(1, {.gpus = gpus})
        .build();
  };
  // 4 GPUs: one small node ($24) costs less than one big one ($40), though big is cheaper per
  // GPU; the cheap low-priority pool is never considered while a higher one can buy.
  EXPECT_EQ(ups(checked_plan(with_job(4))), (std::vector<Up>{{1, -1, 1, 1}}));
  // 8 GPUs: one big node ($40) against two small ones ($48).
  EXPECT_EQ(ups(checked_plan(with_job(8))), (std::vector<Up>{{0, -1, 1, 1}}));
}

TEST(Autoscale, RanksPoolsByCostPerUnitOfWork) {
  auto with_speed = [](double fast_speed) {
    auto b = SnapshotForTest()
                 .now(kNow)
                 .pool(pool("slow", {.gpus = 8, .price = 24}))  // $3 per GPU-hour
                 .pool(pool("fast", {.gpus = 8, .price = 32}))  // $4 per GPU-hour
                 .pending(1, {.gpus = 8});
    b.raw().pools[1].relative_throughput = fast_speed;
    return b.build();
  };
  // Twice the work per GPU-hour for a third more money: the fast pool is cheaper per step.
  EXPECT_EQ(ups(checked_plan(with_speed(2.0))), (std::vector<Up>{{1, -1, 1, 1}}));
  // Only 10 % faster: not worth its price.
  EXPECT_EQ(ups(checked_plan(with_speed(1.1))), (std::vector<Up>{{0, -1, 1, 1}}));
}

TEST(Autoscale, PacksFractionalGpusAndKeepsWholeGpuJobsOffMigPools) {
  model::Pool mig = pool("mig", {.gpus = 1, .price = 1, .priority = 9});
  mig.mig_enabled = true;
  auto snap = SnapshotForTest()
                  .now(kNow)
                  .pool(mig)
                  .pool(pool("one", {.gpus = 1}))
                  .pending(1, {.milli = 500, .submitted = 1})
                  .pending(2, {.milli = 500, .submitted = 2})
                  .pending(3, {.milli = 600, .submitted = 3})
                  .build();
  // Two halves share one GPU; 0.6 GPU does not fit next to them.
  EXPECT_EQ(ups(checked_plan(snap)), (std::vector<Up>{{1, -1, 2, 1}}));
}

TEST(Autoscale, YoungCheckpointInterval) {
  EXPECT_NEAR(util::to_seconds(young_checkpoint_interval(util::seconds(60), 1.0)), 657.267, 1e-3);
  EXPECT_NEAR(util::to_seconds(young_checkpoint_interval(util::seconds(60), 4.0)), 328.634, 1e-3);
  EXPECT_EQ(young_checkpoint_interval(util::seconds(60), 0.0), util::Duration(0));
  EXPECT_EQ(young_checkpoint_interval(util::seconds(60), -1.0), util::Duration(0));
}

}  // namespace
}  // namespace trainyard::sched
