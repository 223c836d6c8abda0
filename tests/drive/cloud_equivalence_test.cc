// A cloud run of the simulator and of the server (fake executor, virtual clock) side by side:
// the same jobs arrive and end, the same spot pool is bought from simcloud, and the same
// reclaims are replayed from one scripted spot trace (node ready after the provisioning delay,
// an interruption notice, the node gone at its deadline). Each job must start, be stopped and
// finish at the same times in both drivers and cost the same in both ledgers, per job and per
// team: the fleet (drive/fleet.h) and the cost keeping of the two drivers held to one behaviour.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cloud/catalog.h"
#include "cloud/spot_trace.h"
#include "server/config.h"
#include "server/control_plane.h"
#include "sim/fleet.h"
#include "sim/simulator.h"
#include "tests/drive/scripted_driver.h"
#include "tests/server/fake_executor.h"

namespace trainyard {
namespace {

// The notice lead is the jobs' grace period, so a noticed worker saves until the reclaim in
// both drivers; whole seconds everywhere, so the server's one-second cycle sees every event
// when the simulator does.
constexpr int kNoticeSeconds = 30;
constexpr int kProvisioningSeconds = 20;
constexpr int kIdleTimeout = 60;
constexpr const char* kCatalog =
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,"
    "AvailabilityZone\n"
    "p3.8xlarge,V100,4.0,32.0,244.0,12.24,3.67,us-east-1,use1-az1\n"
    "p3.8xlarge,V100,4.0,32.0,244.0,12.24,3.91,us-east-1,use1-az2\n";
// Spot nodes obtainable over time: each fall reclaims that many nodes (700 s, 1500 s), and the
// trace loops every 3,300 s.
constexpr const char* kSpotTrace = "seconds,count\n0,8\n700,7\n1500,6\n2600,8\n";

using drive_test::ScriptedJob;

// A job's timeline and what the ledger charged it.
struct Outcome : drive_test::Timeline {
  cloud::CostTotals cost;
};

struct DriverRun {
  std::vector<Outcome> jobs;
  std::map<std::string, cloud::CostTotals> teams;
};

std::string describe(const std::vector<ScriptedJob>& script, const DriverRun& run) {
  std::string out;
  for (size_t i = 0; i < run.jobs.size(); ++i) {
    const Outcome& o = run.jobs[i];
    out += fmt::format("  {:<3} start {:>5} finish {:>5} stopped {} ${:.6f} lost {:.6f} GPUh\n",
                       script[i].name, o.first_start, o.finish, o.stops, o.cost.cost_usd,
                       o.cost.lost_gpu_hours);
  }
  for (const auto& [team, t] : run.teams)
    out += fmt::format("  team {} ${:.6f} {:.6f} GPUh lost ${:.6f}\n", team, t.cost_usd,
                       t.gpu_hours, t.lost_cost_usd);
  return out;
}

model::Pool spot_pool() {
  model::Pool p;
  p.name = "v100-spot";
  p.kind = model::PoolKind::Spot;
  p.provider = "aws";
  p.instance_type = "p3.8xlarge";
  p.region = "us-east-1";
  p.max_nodes = 4;
  p.idle_timeout_seconds = kIdleTimeout;
  p.autoscaled = true;
  return p;
}

DriverRun simulate(const std::vector<ScriptedJob>& script, const std::string& policy,
                   const std::filesystem::path& dir) {
  auto catalog = cloud::load_catalog((dir / "catalog").string());
  auto trace = cloud::load_spot_trace(dir / "spot.csv");
  EXPECT_TRUE(catalog.is_ok() && trace.is_ok());
  if (!catalog.is_ok() || !trace.is_ok()) return {};
  auto scenario = std::make_shared<sim::CloudScenario>();
  scenario->name = "spot";
  scenario->pools = {spot_pool()};
  scenario->offerings = catalog->offerings;
  scenario->checkpoints = sim::CheckpointPolicy::None;
  scenario->simcloud.default_provisioning_delay = util::seconds(kProvisioningSeconds);
  scenario->simcloud.provisioning_delay.clear();
  for (auto& [provider, lead] : scenario->simcloud.notice_lead)
    lead = util::seconds(kNoticeSeconds);
  scenario->simcloud.replay = cloud::SpotReplay{.every_offering = std::move(*trace)};
  const sim::Workload w = drive_test::scripted_workload(script, std::nullopt);
  auto cluster = sim::parse_cluster_yaml(
      "pools: [{name: v100-spot, kind: spot, provider: aws, instanceType: p3.8xlarge, "
      "maxNodes: 4}]\nteams: [{name: a}, {name: b}]\n",
      "cluster.yaml");
  EXPECT_TRUE(cluster.is_ok()) << cluster.status().to_string();
  if (!cluster.is_ok()) return {};
  sim::SimOptions o;
  o.policy.name = policy;
  o.grace_period = util::seconds(kNoticeSeconds);
  o.restart_delay = util::Duration(0);
  o.full_invariant_check = true;
  o.cloud = scenario;
  auto r = sim::simulate(w, *cluster, o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok() || !r->cost) return {};
  EXPECT_EQ(r->unfinished, 0);
  DriverRun out{.jobs = std::vector<Outcome>(script.size()), .teams = r->cost->teams};
  for (const sim::JobOutcome& j : r->jobs) {
    Outcome& job = out.jobs[static_cast<size_t>(j.id.value() - 1)];
    job.first_start = static_cast<int64_t>(util::to_seconds(j.first_start));
    job.finish = static_cast<int64_t>(util::to_seconds(j.finish));
    job.stops = j.preemptions;
    job.cost = r->cost->jobs[std::to_string(j.id.value())];
  }
  return out;
}

std::string manifest(const ScriptedJob& s) {
  return fmt::format(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {{name: {}}}\nspec:\n  team: {}\n"
      "  workers: {}\n  preemptible: true\n  checkpoint: {{gracePeriodSeconds: {}}}\n"
      "  template:\n    command: [train]\n"
      "    resources: {{limits: {{nvidia.com/gpu: {}, cpu: 1, memory: 1Gi}}}}\n",
      s.name, s.team, s.workers, kNoticeSeconds, s.gpus);
}

cloud::CostTotals totals(const nlohmann::json& j) {
  return {.cost_usd = j["cost_usd"].get<double>(),
          .gpu_hours = j["gpu_hours"].get<double>(),
          .lost_gpu_hours = j["lost_gpu_hours"].get<double>(),
          .lost_cost_usd = j["lost_cost_usd"].get<double>()};
}

// The server on the same pool, reconciled every second; a job's workers exit once it has run
// its duration in one attempt (no checkpoints: a stopped job starts over, as simulated), and a
// noticed worker saves for its grace period and exits 75 at its end.
DriverRun serve(const std::vector<ScriptedJob>& script, const std::string& policy,
                const std::filesystem::path& dir) {
  util::VirtualClock clock{util::kEpoch + util::seconds(1'800'000'000)};
  server::FakeExecutor exec;
  auto config = server::parse_server_config(
      fmt::format("capacity:\n  provider: simcloud\n  catalog: {}\n  throughputs: \"\"\n"
                  "  spotTrace: {}\n  provisioningDelay: {}\n  noticeSeconds: {}\n"
                  "  pools:\n    - {{name: v100-spot, kind: spot, provider: aws, instanceType: "
                  "p3.8xlarge, region: us-east-1, maxNodes: 4, idleTimeout: {}}}\n"
                  "teams: [{{name: a}}, {{name: b}}]\n",
                  (dir / "catalog").string(), (dir / "spot.csv").string(), kProvisioningSeconds,
                  kNoticeSeconds, kIdleTimeout),
      "config.yaml");
  EXPECT_TRUE(config.is_ok()) << config.status().to_string();
  if (!config.is_ok()) return {};
  config->policy.name = policy;
  auto plane =
      server::ControlPlane::open({.state_dir = dir / "state", .config = *config},
                                 server::ControlPlane::nodes_from_devices({}), exec, clock);
  EXPECT_TRUE(plane.is_ok()) << plane.status().to_string();
  if (!plane.is_ok()) return {};
  std::vector<int64_t> ids;
  const std::vector<drive_test::Timeline> timelines =
      drive_test::serve_script(**plane, exec, clock, script, manifest, kNoticeSeconds, &ids);
  if (timelines.empty()) return {};
  DriverRun out{.jobs = std::vector<Outcome>(script.size())};
  std::map<int64_t, size_t> index_of;  // job id -> script index
  for (size_t i = 0; i < script.size(); ++i) {
    static_cast<drive_test::Timeline&>(out.jobs[i]) = timelines[i];
    index_of[ids[i]] = i;
  }
  const server::Principal admin{.admin = true, .name = "test"};
  auto cost = (*plane)->cost("", "-1d", "", admin);
  EXPECT_TRUE(cost.is_ok()) << cost.status().to_string();
  if (!cost.is_ok()) return {};
  for (const auto& j : (*cost)["jobs"]) {
    auto it = index_of.find(std::stoll(j["job"].get<std::string>()));
    if (it != index_of.end()) out.jobs[it->second].cost = totals(j);
  }
  for (const auto& t : (*cost)["teams"]) out.teams[t["team"].get<std::string>()] = totals(t);
  return out;
}

void expect_same_cost(const cloud::CostTotals& simulated, const cloud::CostTotals& served,
                      const std::string& what) {
  EXPECT_NEAR(served.cost_usd, simulated.cost_usd, 1e-6) << what;
  EXPECT_NEAR(served.gpu_hours, simulated.gpu_hours, 1e-9) << what;
  EXPECT_NEAR(served.lost_gpu_hours, simulated.lost_gpu_hours, 1e-9) << what;
  EXPECT_NEAR(served.lost_cost_usd, simulated.lost_cost_usd, 1e-6) << what;
}

class CloudEquivalence : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("ty-cloud-eq-{}-{}", ::getpid(), GetParam());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "catalog");
    std::ofstream(dir_ / "catalog" / "aws_gpu.csv") << kCatalog;
    std::ofstream(dir_ / "spot.csv") << kSpotTrace;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

void expect_same(const DriverRun& simulated, const DriverRun& served,
                 const std::vector<ScriptedJob>& script) {
  ASSERT_EQ(simulated.jobs.size(), script.size());
  ASSERT_EQ(served.jobs.size(), script.size());
  const std::string both =
      "simulated:\n" + describe(script, simulated) + "served:\n" + describe(script, served);
  std::printf("%s", both.c_str());
  int stops = 0;
  for (size_t i = 0; i < script.size(); ++i) {
    const Outcome &s = simulated.jobs[i], &v = served.jobs[i];
    EXPECT_EQ(v.first_start, s.first_start) << script[i].name << "\n" << both;
    EXPECT_EQ(v.finish, s.finish) << script[i].name << "\n" << both;
    EXPECT_EQ(v.stops, s.stops) << script[i].name << "\n" << both;
    expect_same_cost(s.cost, v.cost, "job " + script[i].name);
    stops += s.stops;
  }
  EXPECT_GE(stops, 2) << "the script should see jobs stopped by reclaims\n" << both;
  ASSERT_EQ(served.teams.size(), simulated.teams.size()) << both;
  for (const auto& [team, t] : simulated.teams)
    expect_same_cost(t, served.teams.at(team), "team " + team);
}

// A gang, jobs of two teams sharing nodes, two reclaims of a node a job holds (the replacement
// of the first comes from the other zone, which reclaims the second), idle nodes released.
TEST_P(CloudEquivalence, JobsRunAndCostTheSameThroughReclaims) {
  const std::vector<ScriptedJob> script = {
      {"a1", 0, 1200, 1, 4, "normal", true, "a"},   {"b1", 100, 300, 1, 2, "normal", true, "b"},
      {"b2", 900, 610, 2, 4, "normal", true, "b"},  {"a2", 1000, 200, 1, 1, "normal", true, "a"},
      {"a3", 1000, 400, 1, 2, "normal", true, "a"},
  };
  expect_same(simulate(script, GetParam(), dir_), serve(script, GetParam(), dir_), script);
}

// b2 ends (freeing two az2 nodes) at the second when a1's replacement becomes ready in az1, and
// placement breaks the tie by node order: both drivers must list the new node in the slot of
// the node gone last (drive::FleetNode::slot), or a1 lands in az1 in one and in az2 in the other
// (same times, $0.08 apart; the server used to append new nodes).
TEST_P(CloudEquivalence, AFreedNodeAndANewNodeAreOrderedAlike) {
  const std::vector<ScriptedJob> script = {
      {"a1", 0, 1200, 1, 4, "normal", true, "a"},   {"b1", 100, 300, 1, 2, "normal", true, "b"},
      {"b2", 900, 600, 2, 4, "normal", true, "b"},  {"a2", 1000, 200, 1, 1, "normal", true, "a"},
      {"a3", 1000, 400, 1, 2, "normal", true, "a"},
  };
  expect_same(simulate(script, GetParam(), dir_), serve(script, GetParam(), dir_), script);
}

INSTANTIATE_TEST_SUITE_P(Policies, CloudEquivalence, ::testing::Values("fifo", "backfill"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace trainyard
