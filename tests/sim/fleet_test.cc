// Cloud runs of the simulator: nodes bought through simcloud, released when idle, reclaimed
// with a notice; the cost ledger balancing to the bill; reproducible seeded interruptions; and
// the capacity scenarios (spot with Young checkpoints loses less than restart from scratch).
#include "sim/fleet.h"

#include <gtest/gtest.h>

#include "cloud/pool_offerings.h"
#include "sched/plan.h"
#include "sim/cost_scenarios.h"
#include "sim/simulator.h"

namespace trainyard::sim {
namespace {

std::vector<cloud::Offering> offerings() {
  std::vector<cloud::Offering> out;
  for (const char* zone : {"z1", "z2"}) {
    cloud::Offering o;
    o.provider = "aws";
    o.instance_type = "p3.2xlarge";
    o.region = "r1";
    o.zone = zone;
    o.accelerator = "V100-16GB";
    o.gpus_per_node = 1;
    o.vcpus = 8;
    o.memory_gib = 61;
    o.on_demand_per_hour = 3.06;
    o.spot_per_hour = zone == std::string("z1") ? 0.90 : 0.95;
    out.push_back(o);
  }
  return out;
}

ClusterConfig cloud_cluster() {
  auto c = parse_cluster_yaml(R"(pools:
  - {name: spot, kind: spot, provider: aws, instanceType: p3.2xlarge, maxNodes: 50,
     idleTimeout: 300, priority: 10}
  - {name: od, kind: on-demand, provider: aws, instanceType: p3.2xlarge, maxNodes: 50,
     idleTimeout: 300}
teams: [{name: t}]
)",
                              "cloud.yaml");
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return *c;
}

Workload jobs(int n, double hours, bool preemptible = true) {
  Workload w;
  for (int i = 0; i < n; ++i) {
    TraceJob t;
    t.submit = util::from_seconds(i * 60.0);
    t.duration = util::seconds_f(hours * 3600);
    t.spec.worker.gpus = 1;
    t.spec.team = "t";
    t.spec.preemptible = preemptible;
    t.has_priority = true;
    w.jobs.push_back(t);
  }
  TraceOptions o;
  o.checkpoint_interval = util::Duration(0);
  o.runtime_limit = RuntimeLimitMode::None;
  finalize(w, o);
  return w;
}

std::vector<SimResult> run_scenarios(const Workload& w, double rate, uint64_t seed,
                                     std::vector<std::string> names = kCostScenarios) {
  CostScenarioOptions o;
  o.scenarios = std::move(names);
  o.offerings = offerings();
  o.simcloud.seed = seed;
  o.simcloud.interruption_rate_per_hour = rate;
  auto scenarios = build_cost_scenarios(cloud_cluster(), o);
  EXPECT_TRUE(scenarios.is_ok()) << scenarios.status().to_string();
  std::vector<SimResult> out;
  for (const auto& s : *scenarios) {
    SimOptions opts;
    opts.policy.name = "fifo";
    opts.seed = seed;
    opts.full_invariant_check = true;
    opts.restart_delay = util::seconds(60);
    opts.cloud = s;
    auto r = simulate(w, cloud_cluster(), opts);
    EXPECT_TRUE(r.is_ok()) << s->name << ": " << r.status().to_string();
    r->policy = s->name;
    out.push_back(std::move(*r));
  }
  return out;
}

double showback(const SimResult& r) {
  double sum = 0;
  for (const auto& [name, t] : r.cost->jobs) sum += t.cost_usd;
  for (const auto& [name, p] : r.cost->pools) sum += p.idle_cost_usd;
  return sum;
}

TEST(CloudSim, OnDemandBuysOneNodePerJobAndReleasesItAfterTheIdleTimeout) {
  const auto r = run_scenarios(jobs(2, 1.0), 0, 1, {"on-demand"}).at(0);
  ASSERT_EQ(r.jobs.size(), 2u);
  for (const auto& j : r.jobs) {
    // 90 s to provision, then one hour of work.
    EXPECT_DOUBLE_EQ(util::to_seconds(j.finish - j.submit), 90 + 3600);
  }
  ASSERT_TRUE(r.cost.has_value());
  // Each node: an hour busy, then 300 s idle before it is given back.
  EXPECT_NEAR(r.cost->total.cost_usd, 2 * 3.06 * (3600 + 300) / 3600.0, 1e-9);
  EXPECT_NEAR(r.cost->total.idle_gpu_hours, 2 * 300 / 3600.0, 1e-9);
  EXPECT_NEAR(showback(r), r.cost->total.cost_usd, 1e-9);
  EXPECT_EQ(r.peak_nodes, 2);
  EXPECT_EQ(r.interruptions, 0);
}

TEST(CloudSim, SeededInterruptionsAreReproducibleAndTheBooksBalance) {
  const Workload w = jobs(12, 3.0);
  const auto a = run_scenarios(w, 1.0, 7, {"spot-young"}).at(0);
  const auto b = run_scenarios(w, 1.0, 7, {"spot-young"}).at(0);
  const auto c = run_scenarios(w, 1.0, 8, {"spot-young"}).at(0);
  EXPECT_GT(a.interruptions, 0);
  EXPECT_EQ(a.interruptions, b.interruptions);
  EXPECT_EQ(a.cost->total.cost_usd, b.cost->total.cost_usd);
  EXPECT_NE(a.cost->total.cost_usd, c.cost->total.cost_usd);
  for (const auto* r : {&a, &b, &c}) {
    EXPECT_EQ(r->jobs.size(), 12u);
    EXPECT_GT(r->cost->total.lost_gpu_hours, 0);
    EXPECT_NEAR(showback(*r), r->cost->total.cost_usd, 1e-9 * r->cost->total.cost_usd);
  }
}

TEST(CloudSim, YoungCheckpointsLoseLessThanRestartingAndSpotCostsLessThanOnDemand) {
  const auto rs = run_scenarios(jobs(10, 4.0), 0.5, 3);
  ASSERT_EQ(rs.size(), 4u);
  std::map<std::string, CostSummary> by;
  for (const auto& r : rs) by[r.policy] = summarize_cost(r);
  EXPECT_EQ(by["on-demand"].lost_gpu_hours, 0);
  EXPECT_GT(by["spot-restart"].lost_gpu_hours, by["spot-young"].lost_gpu_hours);
  // Young at 0.5/h with 30 s saves: sqrt(2·30·7200) ≈ 657 s; a reclaim loses about half of it
  // plus nothing of the restart delay (that is counted apart).
  EXPECT_GT(by["spot-young"].lost_s_per_interruption, 0);
  EXPECT_LT(by["spot-young"].lost_s_per_interruption, 657);
  EXPECT_LT(by["spot-young"].cost_per_job, 0.45 * by["on-demand"].cost_per_job);
  EXPECT_LT(by["mixed"].cost_per_job, 0.45 * by["on-demand"].cost_per_job);
}

TEST(CloudSim, JobsThatMayNotBePreemptedNeverRunOnSpotInTheMixedPolicy) {
  const auto r = run_scenarios(jobs(4, 1.0, /*preemptible=*/false), 2.0, 1, {"mixed"}).at(0);
  ASSERT_EQ(r.jobs.size(), 4u);
  EXPECT_EQ(r.cost->pools.count("spot"), 0u);
  EXPECT_GT(r.cost->pools.at("od").cost_usd, 0);
  EXPECT_EQ(r.interruptions, 0);
}

TEST(CloudSim, AReclaimedZoneBacksOffSoTheReplacementGoesElsewhere) {
  CloudScenario s;
  s.pools = cloud_cluster().pools;
  s.pools.pop_back();  // spot only
  s.offerings = offerings();
  s.simcloud.interruption_rate_per_hour = 3600.0;  // reclaimed within seconds of ready
  s.simcloud.default_provisioning_delay = util::seconds(10);
  sched::Snapshot snap;
  Occupancy occ(snap);
  auto fleet = Fleet::create(s, snap, occ);
  ASSERT_TRUE(fleet.is_ok()) << fleet.status().to_string();
  ASSERT_EQ(snap.pools.size(), 1u);
  ASSERT_EQ(snap.pools[0].zones.size(), 2u);
  EXPECT_EQ(snap.pools[0].zones[0].name, "z1");  // cheapest first
  sched::Plan plan;
  plan.scale_ups.push_back({.pool = 0, .zone = 0, .nodes = 1});
  ASSERT_TRUE((*fleet)->apply(plan, util::Time{}).is_ok());
  std::vector<FleetNotice> notices;
  util::Time t{};
  while (notices.empty() && t < util::from_seconds(3600)) {
    auto next = (*fleet)->next_wake(t, false);
    ASSERT_TRUE(next.has_value());
    t = *next;
    ASSERT_TRUE((*fleet)->poll(t, [&](const FleetNotice& n) { notices.push_back(n); }).is_ok());
  }
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_GT(snap.pools[0].zones[0].blocked_until, t);
  EXPECT_LE(snap.pools[0].zones[1].blocked_until, t);
  EXPECT_FALSE(snap.nodes[notices[0].node_idx].schedulable);
}

TEST(CloudSim, ARefusedSpotRequestBlocksItsZoneAndThePoolOnlyOnceEveryZoneRefused) {
  CloudScenario s;
  s.pools = cloud_cluster().pools;
  s.pools.pop_back();  // spot only
  s.offerings = offerings();
  s.simcloud.default_spot_capacity = 0;  // every spot request is refused
  sched::Snapshot snap;
  Occupancy occ(snap);
  auto fleet = Fleet::create(s, snap, occ);
  ASSERT_TRUE(fleet.is_ok()) << fleet.status().to_string();
  const sched::SnapshotPool& p = snap.pools[0];
  ASSERT_EQ(p.zones.size(), 2u);
  for (int zone = 0; zone < 2; ++zone) {
    const util::Time t = util::from_seconds(10.0 * (zone + 1));
    sched::Plan plan;
    plan.scale_ups.push_back({.pool = 0, .zone = zone, .nodes = 1});
    ASSERT_TRUE((*fleet)->apply(plan, t).is_ok());
    ASSERT_TRUE((*fleet)->poll(t, [](const FleetNotice&) {}).is_ok());
    EXPECT_EQ((*fleet)->refusals(), zone + 1);
    // The refused zone waits; the pool is out only once no zone is left to try.
    EXPECT_EQ(p.zones[zone].blocked_until, t + s.spot_retry);
    if (zone == 0) {
      EXPECT_EQ(p.zones[1].blocked_until, util::Time{});
      EXPECT_EQ(p.unavailable_until, util::Time{});
    } else {
      EXPECT_EQ(p.unavailable_until, util::from_seconds(10) + s.spot_retry);
    }
  }
}

// One scenario of cloud_cluster() under `o` (offerings and scenario name filled in here).
SimResult run_one(const Workload& w, CostScenarioOptions o, const std::string& name,
                  util::Duration horizon = util::seconds(60 * 86400)) {
  o.scenarios = {name};
  o.offerings = offerings();
  auto scenarios = build_cost_scenarios(cloud_cluster(), o);
  EXPECT_TRUE(scenarios.is_ok()) << scenarios.status().to_string();
  SimOptions opts;
  opts.policy.name = "fifo";
  opts.full_invariant_check = true;
  opts.cloud = scenarios->at(0);
  opts.cloud_horizon = horizon;
  auto r = simulate(w, cloud_cluster(), opts);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  r->policy = name;
  return std::move(*r);
}

int64_t sum_of(const std::map<std::string, int64_t>& by_reason) {
  int64_t n = 0;
  for (const auto& [reason, count] : by_reason) n += count;
  return n;
}

TEST(CloudSim, LostWorkPerInterruptionCountsJobsThatNeverFinished) {
  // Restarting from scratch, 20-hour jobs under 2 reclaims per node-hour never finish within
  // a one-day horizon: every reclaim's lost work belongs to an unfinished job.
  CostScenarioOptions o;
  o.simcloud.seed = 5;
  o.simcloud.interruption_rate_per_hour = 2.0;
  const SimResult r = run_one(jobs(3, 20.0), o, "spot-restart", util::seconds(86400));
  const CostSummary s = summarize_cost(r);
  EXPECT_EQ(s.jobs, 0);
  EXPECT_EQ(s.unfinished, 3);
  EXPECT_TRUE(s.stopped_at_horizon);
  EXPECT_EQ(sum_of(s.unfinished_by_reason), s.unfinished);
  ASSERT_GT(s.interruptions, 0);
  ASSERT_GT(s.lost_gpu_hours, 0);
  ASSERT_GT(s.interrupted_job_stops, 0);
  EXPECT_LE(s.interrupted_job_stops, s.interruptions);
  // One-GPU jobs and no preemptions by the scheduler: the ledger's lost GPU-hours are the
  // reclaims' lost wall time, so lost/int × stops gives them back.
  EXPECT_GT(s.lost_s_per_interruption, 0);
  EXPECT_NEAR(s.lost_s_per_interruption * static_cast<double>(s.interrupted_job_stops),
              s.lost_gpu_hours * 3600, 1e-6 * s.lost_gpu_hours * 3600);
  // A job pays the 60 s restart delay after each reclaim but perhaps the last.
  EXPECT_GT(s.restart_s_per_interruption, 0);
  EXPECT_LE(s.restart_s_per_interruption, 60);
  EXPECT_NE(cost_table({s}).find("spot-restart: 3 unfinished ("), std::string::npos)
      << cost_table({s});
}

TEST(CloudSim, ARunWhoseSpotRequestsWereRefusedWaitsForThePoolToReopen) {
  // No spot capacity for the first two hours, then two nodes: the first requests are refused
  // and nothing else is due, so only the pool's reopening can wake the run.
  CostScenarioOptions o;
  cloud::SpotTrace t{.source = "gap",
                     .period = util::seconds(100 * 3600),
                     .capacity = {{util::seconds(0), 0}, {util::seconds(7200), 2}},
                     .reclaims = {}};
  o.simcloud.replay = cloud::SpotReplay{.every_offering = t};
  const SimResult r = run_one(jobs(2, 1.0), o, "spot-young");
  EXPECT_EQ(r.unfinished, 0) << sum_of(r.unfinished_by_reason);
  ASSERT_EQ(r.jobs.size(), 2u);
  for (const auto& j : r.jobs) EXPECT_GE(j.first_start, util::from_seconds(7200));
  EXPECT_FALSE(r.stopped_at_horizon);
}

TEST(CloudSim, JobsThatFitNoPoolAreUnfinishedWithTheirReason) {
  Workload w = jobs(2, 1.0);
  w.jobs[1].spec.worker.gpus = 2;  // the pools sell one-GPU nodes only
  const SimResult r = run_one(w, {}, "on-demand");
  EXPECT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.unfinished, 1);
  EXPECT_FALSE(r.stopped_at_horizon);
  const std::map<std::string, int64_t> want = {{"NeverFits", 1}};
  EXPECT_EQ(r.unfinished_by_reason, want);
  const CostSummary s = summarize_cost(r);
  EXPECT_NE(cost_table({s}).find("on-demand: 1 unfinished (1 NeverFits); nothing was left to "
                                 "happen before the horizon"),
            std::string::npos)
      << cost_table({s});
}

TEST(CloudSim, ScenariosNeedTheirPools) {
  CostScenarioOptions o;
  o.scenarios = {"mixed"};
  auto only_spot = cloud_cluster();
  only_spot.pools.pop_back();
  auto r = build_cost_scenarios(only_spot, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("needs an on-demand pool"), std::string::npos);
  o.scenarios = {"cheapest"};
  EXPECT_FALSE(build_cost_scenarios(cloud_cluster(), o).is_ok());
}

TEST(CloudSim, CloudPoolsParseWithPreciseErrors) {
  auto c = cloud_cluster();
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_TRUE(c.pools[0].autoscaled);
  EXPECT_EQ(c.pools[0].kind, model::PoolKind::Spot);
  EXPECT_EQ(c.pools[0].max_nodes, 50);
  EXPECT_EQ(c.pools[0].priority, 10);
  EXPECT_TRUE(c.nodes.empty());
  auto bad = parse_cluster_yaml(
      "pools:\n  - {name: x, kind: reserved, provider: aws, instanceType: p3.2xlarge, "
      "maxNodes: 2}\n",
      "c.yaml");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("c.yaml:2"), std::string::npos) << bad.status().message();
  auto no_max =
      parse_cluster_yaml("pools:\n  - {name: x, provider: aws, instanceType: p3.2xlarge}\n", "c");
  ASSERT_FALSE(no_max.is_ok());
  EXPECT_NE(no_max.status().message().find("maxNodes"), std::string::npos);
  auto budget = parse_cluster_yaml(
      "pools: [{name: x, provider: aws, instanceType: p3.2xlarge, maxNodes: 1}]\n"
      "teams: [{name: t, budget: {usd: 100, period: day}}]\n",
      "c");
  ASSERT_TRUE(budget.is_ok()) << budget.status().to_string();
  EXPECT_EQ(budget->teams[0].budget_usd, 100);
  EXPECT_EQ(budget->teams[0].budget_period, model::Team::BudgetPeriod::Day);
}

TEST(CloudSim, PoolsResolveAgainstTheCatalogOrSayWhatItSells) {
  auto offers = offerings();
  model::Pool p;
  p.name = "x";
  p.kind = model::PoolKind::Spot;
  p.provider = "aws";
  p.instance_type = "p3.2xlarge";
  auto r = cloud::resolve_pool(offers, p, nullptr);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->zones, (std::vector<std::string>{"z1", "z2"}));
  EXPECT_EQ(p.gpu_model, "V100-16GB");
  EXPECT_EQ(p.gpus_per_node, 1);
  EXPECT_DOUBLE_EQ(p.price_per_node_hour, 0.90);
  EXPECT_DOUBLE_EQ(p.relative_throughput, 1.0);
  const auto table = cloud::ThroughputTable::from_measurements(
      {{"job", {{"V100-16GB", 10.0}, {"A100-80GB", 25.0}}}});
  model::Pool q = p;
  q.instance_type = "p3.2xlarge";
  ASSERT_TRUE(cloud::resolve_pool(offers, q, &table, "job").is_ok());
  EXPECT_DOUBLE_EQ(q.relative_throughput, 1.0);  // V100 is the reference
  offers[0].accelerator = offers[1].accelerator = "A100-80GB";
  ASSERT_TRUE(cloud::resolve_pool(offers, q, &table, "job").is_ok());
  EXPECT_DOUBLE_EQ(q.relative_throughput, 2.5);
  p.zones = {"z3"};
  auto bad_zone = cloud::resolve_pool(offers, p, nullptr);
  ASSERT_FALSE(bad_zone.is_ok());
  EXPECT_NE(bad_zone.status().message().find("zones that do: z1, z2"), std::string::npos)
      << bad_zone.status().message();
  p.zones.clear();
  p.instance_type = "p9.huge";
  EXPECT_FALSE(cloud::resolve_pool(offers, p, nullptr).is_ok());
}

}  // namespace
}  // namespace trainyard::sim
