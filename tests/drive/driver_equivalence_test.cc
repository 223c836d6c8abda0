// The simulator and the server side by side on the same cloud pools: what drive/ holds them to.
// A MIG job is billed the same share of its node in a simulated cloud run and in the server's
// cost ledger, and both rank a pool by the same speed from Gavel's table.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/config.h"
#include "server/control_plane.h"
#include "server/fleet.h"
#include "sim/fleet.h"
#include "sim/simulator.h"
#include "tests/server/fake_executor.h"

namespace trainyard {
namespace {

const std::string kGavel = std::string(TY_SHARED_DIR) + "/traces/gavel/simulation_throughputs.json";

// One on-demand A100 node of 1 GPU, MIG on: "p4.test" at 4.10 $/h.
cloud::Offering a100_offering() {
  cloud::Offering o;
  o.provider = "aws";
  o.instance_type = "p4.test";
  o.region = "us-east-1";
  o.zone = "use1-az1";
  o.accelerator = "A100-80GB";
  o.gpus_per_node = 1;
  o.vcpus = 12;
  o.memory_gib = 85;
  o.on_demand_per_hour = 4.10;
  o.spot_per_hour = 1.20;
  return o;
}
constexpr const char* kCatalog =
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,"
    "AvailabilityZone\n"
    "p4.test,A100-80GB,1.0,12.0,85.0,4.10,1.20,us-east-1,use1-az1\n";

model::Pool a100_pool() {
  model::Pool p;
  p.name = "a100";
  p.kind = model::PoolKind::OnDemand;
  p.provider = "aws";
  p.instance_type = "p4.test";
  p.region = "us-east-1";
  p.max_nodes = 1;
  p.idle_timeout_seconds = 30;
  p.autoscaled = true;
  p.mig_enabled = true;
  return p;
}

class DriverEquivalence : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ty-drive-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "catalog");
    std::ofstream(dir_ / "catalog" / "aws_gpu.csv") << kCatalog;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The server's capacity section for a100_pool(), with `extra` lines under capacity:.
  server::ServerConfig server_config(const std::string& extra = "") {
    auto c = server::parse_server_config(
        "capacity:\n  provider: simcloud\n  catalog: " + (dir_ / "catalog").string() +
            "\n  interruptionRatePerHour: 0\n  provisioningDelay: 5\n" + extra +
            "  pools:\n    - {name: a100, provider: aws, instanceType: p4.test, region: "
            "us-east-1, maxNodes: 1, idleTimeout: 30}\n",
        "c.yaml");
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    if (!c.is_ok()) return {};
    c->capacity.pools[0].mig_enabled = true;  // as a100_pool()
    return *c;
  }

  std::filesystem::path dir_;
};

// GPU-hours billed to the one job of a simulated cloud run ÷ its hours of work.
double simulated_share(const std::string& mig_profile) {
  auto scenario = std::make_shared<sim::CloudScenario>();
  scenario->name = "on-demand";
  scenario->pools = {a100_pool()};
  scenario->offerings = {a100_offering()};
  scenario->checkpoints = sim::CheckpointPolicy::None;
  sim::Workload w;
  sim::TraceJob t;
  t.duration = util::seconds(3600);
  t.spec.worker.mig_profile = mig_profile;
  t.spec.team = "t";
  t.has_priority = true;
  w.jobs.push_back(t);
  sim::TraceOptions o;
  o.checkpoint_interval = util::Duration(0);
  o.runtime_limit = sim::RuntimeLimitMode::None;
  sim::finalize(w, o);
  // The cluster's teams; its pools are the scenario's.
  auto cluster = sim::parse_cluster_yaml(
      "pools: [{name: a100, provider: aws, instanceType: p4.test, maxNodes: 1}]\n"
      "teams: [{name: t}]\n",
      "c.yaml");
  if (!cluster.is_ok()) {
    ADD_FAILURE() << cluster.status().to_string();
    return -1;
  }
  sim::SimOptions opts;
  opts.policy.name = "fifo";
  opts.full_invariant_check = true;
  opts.cloud = scenario;
  auto r = sim::simulate(w, *cluster, opts);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok() || r->jobs.size() != 1 || r->cost->jobs.size() != 1) {
    ADD_FAILURE() << "the simulated MIG job did not run";
    return -1;
  }
  return r->cost->jobs.begin()->second.gpu_hours;
}

TEST_F(DriverEquivalence, AMigJobIsBilledTheSameShareInASimulatedRunAndByTheServer) {
  const double simulated = simulated_share("3g.40gb");

  util::VirtualClock clock{util::kEpoch + util::seconds(1'800'000'000)};
  server::FakeExecutor exec;
  auto plane =
      server::ControlPlane::open({.state_dir = dir_ / "state", .config = server_config()},
                                 server::ControlPlane::nodes_from_devices({}), exec, clock);
  ASSERT_TRUE(plane.is_ok()) << plane.status().to_string();
  const server::Principal admin{.admin = true, .name = "test"};
  auto job = (*plane)->submit(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: mig}\nspec:\n  team: t\n"
      "  template:\n    command: [train]\n    resources: {limits: {nvidia.com/mig-3g.40gb: 1}}\n",
      "job.yaml", admin);
  ASSERT_TRUE(job.is_ok()) << job.status().to_string();
  auto cycle = [&](double seconds) {
    clock.advance_to(clock.now() + util::seconds_f(seconds));
    ASSERT_TRUE((*plane)->reconcile_once().is_ok());
  };
  for (int i = 0; i < 20 && exec.launches.empty(); ++i) cycle(1);
  ASSERT_EQ(exec.launches.size(), 1u);
  cycle(3600);  // an hour of work
  exec.exit(1000, 0);
  cycle(0);
  auto cost = (*plane)->cost("", "-1d", "", admin);
  ASSERT_TRUE(cost.is_ok()) << cost.status().to_string();
  ASSERT_EQ((*cost)["jobs"].size(), 1u) << cost->dump();
  const double served = (*cost)["jobs"][0]["gpu_hours"].get<double>();

  EXPECT_NEAR(simulated, 3.0 / 7, 1e-3);
  EXPECT_NEAR(served, simulated, 1e-3);
}

TEST_F(DriverEquivalence, BothDriversRankAPoolByTheSameSpeedFromGavelsTable) {
  auto table = cloud::ThroughputTable::load_gavel(kGavel);
  ASSERT_TRUE(table.is_ok()) << table.status().to_string();
  sim::CloudScenario s;
  s.pools = {a100_pool()};
  s.offerings = {a100_offering()};
  s.throughputs = std::make_shared<const cloud::ThroughputTable>(std::move(*table));
  sched::Snapshot simulated;
  sim::Occupancy occupancy(simulated);
  ASSERT_TRUE(sim::Fleet::create(s, simulated, occupancy).is_ok());

  util::VirtualClock clock{util::kEpoch};
  auto fleet =
      server::Fleet::open(server_config("  throughputs: " + kGavel + "\n").capacity, clock);
  ASSERT_TRUE(fleet.is_ok()) << fleet.status().to_string();
  sched::Snapshot served;
  (*fleet)->add_pools(served);

  ASSERT_EQ(simulated.pools.size(), 1u);
  ASSERT_EQ(served.pools.size(), 1u);
  EXPECT_GT(simulated.pools[0].relative_throughput, 1.5);  // an A100 against the V100
  EXPECT_DOUBLE_EQ(served.pools[0].relative_throughput, simulated.pools[0].relative_throughput);
}

}  // namespace
}  // namespace trainyard
