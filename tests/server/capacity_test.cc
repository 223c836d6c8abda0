// The capacity loop with simcloud on a virtual clock: the capacity config, the fleet on its own
// (scale-up -> ready, forced reclaim -> notice, zone block, gone), and the control plane buying
// a node for a job, stopping the job on an interruption notice with the provider's deadline,
// requeueing it (not a failure), buying the replacement in another zone, releasing idle nodes,
// and billing it all (jobs + idle = the bill).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "cloud/catalog.h"
#include "cloud/simcloud.h"
#include "fake_executor.h"
#include "model/cluster_config.h"
#include "sched/snapshot.h"
#include "server/config.h"
#include "server/control_plane.h"
#include "server/fleet.h"

namespace trainyard::server {
namespace {

constexpr const char* kCatalog =
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,"
    "AvailabilityZone\n"
    "p3.2xlarge,V100,1.0,8.0,61.0,3.06,0.50,us-east-1,use1-az1\n"
    "p3.2xlarge,V100,1.0,8.0,61.0,3.06,0.60,us-east-1,use1-az2\n"
    "p3.2xlarge,V100,1.0,8.0,61.0,3.06,0.70,us-east-1,use1-az3\n"
    "p4.test,A100-80GB,1.0,12.0,85.0,4.10,1.20,us-east-1,use1-az1\n";

std::string capacity_yaml(const std::filesystem::path& catalog) {
  return "capacity:\n"
         "  provider: simcloud\n"
         "  catalog: " +
         catalog.string() +
         "\n"
         "  seed: 7\n"
         "  interruptionRatePerHour: 0\n"
         "  provisioningDelay: 5\n"
         "  noticeSeconds: 10\n"
         "  zoneBackoff: 600\n"
         "  pools:\n"
         "    - {name: v100-spot, kind: spot, provider: aws, instanceType: p3.2xlarge,\n"
         "       region: us-east-1, minNodes: 0, maxNodes: 2, idleTimeout: 30}\n";
}

class CapacityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ty-cap-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "catalog");
    std::ofstream(dir_ / "catalog" / "aws_gpu.csv") << kCatalog;
  }
  void TearDown() override {
    plane_.reset();
    std::filesystem::remove_all(dir_);
  }
  ServerConfig config() {
    auto c = parse_server_config(capacity_yaml(dir_ / "catalog"), "c.yaml");
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return c.is_ok() ? *c : ServerConfig{};
  }
  void open_plane() {
    auto p = ControlPlane::open({.state_dir = dir_ / "state", .config = config()},
                                ControlPlane::nodes_from_devices({}), exec_, clock_);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    plane_ = std::move(*p);
  }
  void cycle(double seconds = 0.5) {
    clock_.advance_to(clock_.now() + util::seconds_f(seconds));
    ASSERT_TRUE(plane_->reconcile_once().is_ok());
  }
  nlohmann::json job(int64_t id) { return *plane_->get_job(util::JobId(id), admin_); }
  std::vector<nlohmann::json> cloud_nodes() {
    std::vector<nlohmann::json> out;
    const nlohmann::json all = plane_->nodes();
    for (const auto& n : all["items"])
      if (n["cloud"].get<bool>()) out.push_back(n);
    return out;
  }

  std::filesystem::path dir_;
  util::VirtualClock clock_{util::kEpoch + util::seconds(1'800'000'000)};
  FakeExecutor exec_;
  std::unique_ptr<ControlPlane> plane_;
  Principal admin_{.admin = true, .name = "test"};
};

TEST_F(CapacityTest, ConfigParsesEveryKeyAndNamesBadOnes) {
  ServerConfig c = config();
  EXPECT_EQ(c.capacity.provider, CapacityProvider::SimCloud);
  EXPECT_EQ(c.capacity.seed, 7u);
  EXPECT_EQ(c.capacity.interruption_rate_per_hour, 0.0);
  EXPECT_EQ(c.capacity.provisioning_delay, util::seconds(5));
  EXPECT_EQ(c.capacity.notice, util::seconds(10));
  ASSERT_EQ(c.capacity.pools.size(), 1u);
  const model::Pool& p = c.capacity.pools[0];
  EXPECT_EQ(p.kind, model::PoolKind::Spot);
  EXPECT_EQ(p.instance_type, "p3.2xlarge");
  EXPECT_EQ(p.max_nodes, 2);
  EXPECT_EQ(p.idle_timeout_seconds, 30);
  EXPECT_TRUE(p.autoscaled);

  auto bad = parse_server_config("capacity:\n  provider: azure-live\n", "c.yaml");
  EXPECT_EQ(bad.status().message().rfind("c.yaml:2:13: ", 0), 0u) << bad.status().message();
  bad = parse_server_config(
      "capacity:\n  pools:\n    - {name: a, kind: spot, provider: aws, "
      "instanceType: p3.2xlarge, maxNodes: 2, sizes: 3}\n",
      "c.yaml");
  EXPECT_NE(bad.status().message().find("unknown field \"capacity.pools[0].sizes\""),
            std::string::npos)
      << bad.status().message();
  EXPECT_EQ(bad.status().message().rfind("c.yaml:3:", 0), 0u) << bad.status().message();
  bad = parse_server_config(
      "capacity:\n  pools:\n    - {name: a, kind: reserved, provider: aws, "
      "instanceType: p3.2xlarge, maxNodes: 2}\n",
      "c.yaml");
  EXPECT_NE(bad.status().message().find("spot or on-demand"), std::string::npos);
  bad = parse_server_config("capacity:\n  zoneBackoff: soon\n", "c.yaml");
  EXPECT_NE(bad.status().message().find("capacity.zoneBackoff"), std::string::npos);
  bad = parse_server_config(
      "capacity:\n  pools:\n    - {name: a, provider: aws, "
      "instanceType: p3.2xlarge}\n",
      "c.yaml");
  EXPECT_NE(bad.status().message().find("capacity.pools[0].maxNodes is required"),
            std::string::npos)
      << bad.status().message();
  auto ok = parse_server_config("capacity: {spotFallbackWait: 60}\n", "c.yaml");
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->policy.autoscale.spot_fallback_wait, util::seconds(60));
  EXPECT_EQ(ok->capacity.provider, CapacityProvider::Static);
}

// One parser for a cloud pool (model/cloud_pool_yaml.h): the simulator's cluster file and the
// server's capacity section read the same item to the same pool, and refuse the same mistakes
// with the same words and limits.
TEST(CloudPoolYaml, ClusterFileAndServerConfigReadAPoolAlike) {
  auto item = [](const std::string& change) {
    std::map<std::string, std::string> f = {{"name", "a"},
                                            {"kind", "spot"},
                                            {"provider", "aws"},
                                            {"instanceType", "p3.2xlarge"},
                                            {"region", "us-east-1"},
                                            {"zones", "[us-east-1a, us-east-1b]"},
                                            {"minNodes", "1"},
                                            {"maxNodes", "8"},
                                            {"idleTimeout", "120"},
                                            {"priority", "5"},
                                            {"labels", "{tier: cheap}"}};
    if (!change.empty()) {
      const auto colon = change.find(':');
      f[change.substr(0, colon)] = change.substr(colon + 2);
    }
    std::string out = "{";
    for (const auto& [k, v] : f) out += (out.size() > 1 ? ", " : "") + k + ": " + v;
    return out + "}";
  };
  auto sim = model::parse_cluster_yaml("pools:\n  - " + item("") + "\n", "c.yaml");
  auto srv = parse_server_config("capacity:\n  pools:\n    - " + item("") + "\n", "c.yaml");
  ASSERT_TRUE(sim.is_ok()) << sim.status().to_string();
  ASSERT_TRUE(srv.is_ok()) << srv.status().to_string();
  const model::Pool& a = sim->pools.at(0);
  const model::Pool& b = srv->capacity.pools.at(0);
  EXPECT_EQ(a.kind, model::PoolKind::Spot);
  EXPECT_TRUE(a.autoscaled && b.autoscaled);
  EXPECT_EQ(std::tie(a.name, a.kind, a.provider, a.instance_type, a.region, a.zones, a.min_nodes,
                     a.max_nodes, a.idle_timeout_seconds, a.priority, a.labels),
            std::tie(b.name, b.kind, b.provider, b.instance_type, b.region, b.zones, b.min_nodes,
                     b.max_nodes, b.idle_timeout_seconds, b.priority, b.labels));
  for (const std::string bad : {"maxNodes: 1001", "maxNodes: 0", "minNodes: 9", "kind: reserved",
                                "provider: ''", "instanceType: ''", "idleTimeout: 1e8",
                                "priority: 2000", "zones: us-east-1a", "region: ''"}) {
    auto e1 = model::parse_cluster_yaml("pools:\n  - " + item(bad) + "\n", "c.yaml");
    auto e2 = parse_server_config("capacity:\n  pools:\n    - " + item(bad) + "\n", "c.yaml");
    ASSERT_FALSE(e1.is_ok()) << bad;
    ASSERT_FALSE(e2.is_ok()) << bad;
    const std::string m1 = e1.status().message();
    const std::string m2 = e2.status().message();
    ASSERT_NE(m1.find("pools[0]"), std::string::npos) << m1;
    ASSERT_NE(m2.find("capacity.pools[0]"), std::string::npos) << m2;
    EXPECT_EQ(m1.substr(m1.find("pools[0]")), m2.substr(m2.find("pools[0]"))) << bad;
  }
}

TEST(CloudPoolYaml, NamesAreUniqueAndLocalIsTheServersOwn) {
  auto twice = model::parse_cluster_yaml(
      "pools:\n  - {name: a, provider: aws, instanceType: p3.2xlarge, maxNodes: 1}\n"
      "  - {name: a, provider: aws, instanceType: p3.8xlarge, maxNodes: 1}\n",
      "c.yaml");
  ASSERT_FALSE(twice.is_ok());
  EXPECT_NE(twice.status().message().find("c.yaml:3:"), std::string::npos)
      << twice.status().message();
  EXPECT_NE(twice.status().message().find("'a' is already used"), std::string::npos);
  auto local = parse_server_config(
      "capacity:\n  pools:\n    - {name: local, provider: aws, instanceType: p3.2xlarge, "
      "maxNodes: 1}\n",
      "c.yaml");
  ASSERT_FALSE(local.is_ok());
  EXPECT_NE(local.status().message().find("'local' is this machine's"), std::string::npos)
      << local.status().message();
}

TEST_F(CapacityTest, FleetBuysANodeAndAForcedReclaimBlocksItsZone) {
  ServerConfig c = config();
  auto fleet = Fleet::open(c.capacity, clock_);
  ASSERT_TRUE(fleet.is_ok()) << fleet.status().to_string();
  Fleet& f = **fleet;
  ASSERT_EQ(f.pools().size(), 1u);
  ASSERT_EQ(f.pools()[0].zones.size(), 3u);
  EXPECT_EQ(f.pools()[0].zones[0].name, "use1-az1");  // cheapest first
  EXPECT_DOUBLE_EQ(f.pools()[0].pool.price_per_node_hour, 0.50);

  auto names = f.scale_up({.pool = 0, .zone = 0, .nodes = 1});
  ASSERT_EQ(names, std::vector<std::string>{"v100-spot-1"});
  clock_.advance_to(clock_.now() + util::seconds(1));
  EXPECT_TRUE(f.poll().empty());
  sched::Snapshot snap;
  f.add_pools(snap);
  EXPECT_EQ(snap.pools[0].provisioning, 1);
  clock_.advance_to(clock_.now() + util::seconds(5));
  auto events = f.poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, FleetEvent::Kind::Ready);
  LocalNode n = f.local_node(*f.find("v100-spot-1"), util::NodeId(9));
  EXPECT_EQ(n.node.gpu_count, 1);
  EXPECT_EQ(n.zone, "use1-az1");
  EXPECT_EQ(n.node.labels.at("topology.kubernetes.io/zone"), "use1-az1");
  EXPECT_EQ(n.gpus.at(0).uuid, "GPU-sim-v100-spot-1-0");

  const util::Time noticed = clock_.now();
  ASSERT_TRUE(f.force_interruption("v100-spot-1").is_ok());
  events = f.poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, FleetEvent::Kind::Notice);
  EXPECT_EQ(events[0].deadline, noticed + util::seconds(10));
  sched::Snapshot blocked;
  blocked.now = clock_.now();
  f.add_pools(blocked);
  EXPECT_EQ(blocked.pools[0].zones[0].blocked_until, noticed + util::seconds(600));
  EXPECT_EQ(blocked.pools[0].zones[1].blocked_until, util::Time{});
  EXPECT_EQ(blocked.pools[0].ready, 1);
  clock_.advance_to(clock_.now() + util::seconds(10));
  events = f.poll();  // the reclaim is due now
  events = events.empty() ? f.poll() : events;
  clock_.advance_to(clock_.now() + util::seconds(1));
  for (auto& e : f.poll()) events.push_back(e);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, FleetEvent::Kind::Gone);
  EXPECT_TRUE(events[0].reclaimed);
  EXPECT_EQ(f.find("v100-spot-1"), nullptr);
  EXPECT_EQ(f.pools()[0].interruptions, 1);
}

TEST_F(CapacityTest, SimcloudReclaimGivesANoticeWithItsDeadlineAndBlocksTheZone) {
  ServerConfig c = config();
  c.capacity.interruption_rate_per_hour = 360;  // a reclaim every 10 s on average
  auto fleet = Fleet::open(c.capacity, clock_);
  ASSERT_TRUE(fleet.is_ok()) << fleet.status().to_string();
  Fleet& f = **fleet;
  ASSERT_EQ(f.scale_up({.pool = 0, .zone = 1, .nodes = 1}).size(), 1u);
  std::vector<FleetEvent> seen;
  for (int i = 0; i < 3600 && (seen.empty() || seen.back().kind != FleetEvent::Kind::Gone); ++i) {
    clock_.advance_to(clock_.now() + util::seconds(1));
    for (auto& e : f.poll()) seen.push_back(e);
  }
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].kind, FleetEvent::Kind::Ready);
  EXPECT_EQ(seen[1].kind, FleetEvent::Kind::Notice);
  EXPECT_LE(seen[1].deadline - seen[1].time, util::seconds(10));
  EXPECT_EQ(seen[2].kind, FleetEvent::Kind::Gone);
  EXPECT_TRUE(seen[2].reclaimed);
  EXPECT_EQ(seen[2].time, seen[1].deadline);
  EXPECT_GT(f.pools()[0].zones[1].blocked_until, clock_.now());
  EXPECT_EQ(f.pools()[0].zones[0].blocked_until, util::Time{});
  EXPECT_EQ(f.pools()[0].interruptions, 1);
}

TEST_F(CapacityTest, ARefusedSpotRequestBlocksItsZoneAndThePoolOnlyOnceEveryZoneRefused) {
  ServerConfig c = config();
  auto catalog = cloud::load_catalog((dir_ / "catalog").string());
  ASSERT_TRUE(catalog.is_ok()) << catalog.status().to_string();
  auto pools = Fleet::resolve_pools(c.capacity.pools, catalog->offerings, nullptr);
  ASSERT_TRUE(pools.is_ok()) << pools.status().to_string();
  cloud::SimCloudOptions no_spot;
  no_spot.default_spot_capacity = 0;  // every spot request is refused
  Fleet f(c.capacity, std::move(*pools),
          cloud::make_simcloud(catalog->offerings, {}, no_spot, clock_), clock_);
  ASSERT_EQ(f.pools()[0].zones.size(), 3u);
  // Back-offs count from the refusal (the request's time), not from the poll that saw it a
  // second later: the simulator polls at the refusal, and both must reopen a zone alike.
  const util::Time first = clock_.now();
  for (int zone = 0; zone < 3; ++zone) {
    const util::Time refused = clock_.now();
    ASSERT_EQ(f.scale_up({.pool = 0, .zone = zone, .nodes = 1}).size(), 1u);
    clock_.advance_to(clock_.now() + util::seconds(1));
    const auto events = f.poll();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].kind, FleetEvent::Kind::Failed);
    sched::Snapshot snap;
    f.add_pools(snap);
    const sched::SnapshotPool& p = snap.pools[0];
    // The refused zone waits; the pool is out only once no zone is left to try.
    EXPECT_EQ(p.zones[zone].blocked_until, refused + c.capacity.spot_unavailable_backoff);
    if (zone < 2) {
      EXPECT_EQ(p.zones[zone + 1].blocked_until, util::Time{});
      EXPECT_EQ(p.unavailable_until, util::Time{}) << "after zone " << zone;
    } else {
      EXPECT_EQ(p.unavailable_until, first + c.capacity.spot_unavailable_backoff);
    }
  }
}

TEST_F(CapacityTest, PoolsRankByPricePerUnitOfWorkAsInTheSimulator) {
  // An A100 node costs more per hour than a V100 one (4.10 against 3.06 $) but does about 2.4
  // times the work: ranked by Gavel's table the A100 pool is bought, by price the V100 one.
  const std::string gavel =
      std::string(TY_SHARED_DIR) + "/traces/gavel/simulation_throughputs.json";
  for (const bool by_work : {true, false}) {
    const std::string table = by_work ? gavel : "\"\"";
    auto c = parse_server_config(
        "capacity:\n  provider: simcloud\n  catalog: " + (dir_ / "catalog").string() +
            "\n  interruptionRatePerHour: 0\n  provisioningDelay: 5\n  throughputs: " + table +
            "\n  pools:\n"
            "    - {name: v100, provider: aws, instanceType: p3.2xlarge, region: us-east-1, "
            "maxNodes: 1}\n"
            "    - {name: a100, provider: aws, instanceType: p4.test, region: us-east-1, "
            "maxNodes: 1}\n",
        "c.yaml");
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    plane_.reset();
    auto p =
        ControlPlane::open({.state_dir = dir_ / (by_work ? "by-work" : "by-price"), .config = *c},
                           ControlPlane::nodes_from_devices({}), exec_, clock_);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    plane_ = std::move(*p);
    ASSERT_TRUE(plane_
                    ->submit("apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: t}\n"
                             "spec:\n  template:\n    command: [train]\n"
                             "    resources: {limits: {nvidia.com/gpu: 1}}\n",
                             "job.yaml", admin_)
                    .is_ok());
    cycle();
    const auto nodes = cloud_nodes();
    ASSERT_EQ(nodes.size(), 1u) << plane_->nodes().dump();
    EXPECT_EQ(nodes[0]["pool"], by_work ? "a100" : "v100") << table;
  }
}

TEST_F(CapacityTest, UnknownInstanceTypeIsRefusedWithThePool) {
  ServerConfig c = config();
  c.capacity.pools[0].instance_type = "p9.mega";
  auto fleet = Fleet::open(c.capacity, clock_);
  ASSERT_FALSE(fleet.is_ok());
  EXPECT_NE(fleet.status().message().find("v100-spot"), std::string::npos);
}

TEST_F(CapacityTest, InterruptedJobIsRequeuedAndResumesOnANodeInAnotherZone) {
  open_plane();
  auto r = plane_->submit(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: train}\nspec:\n"
      "  preemptible: true\n  team: vision\n"
      "  template:\n    command: [train]\n    resources: {limits: {nvidia.com/gpu: 1}}\n",
      "job.yaml", admin_);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const int64_t id = (*r)["id"].get<int64_t>();
  cycle();
  auto nodes = cloud_nodes();
  ASSERT_EQ(nodes.size(), 1u) << plane_->nodes().dump();
  EXPECT_EQ(nodes[0]["state"], "provisioning");
  const std::string first_zone = nodes[0]["zone"];
  EXPECT_EQ(first_zone, "use1-az1");
  EXPECT_EQ(job(id)["state"], "pending");
  for (int i = 0; i < 12 && exec_.launches.empty(); ++i) cycle();
  ASSERT_EQ(exec_.launches.size(), 1u) << job(id).dump();
  EXPECT_EQ(exec_.launches[0].visible_devices, std::vector<std::string>{"GPU-sim-v100-spot-1-0"});
  EXPECT_EQ(job(id)["state"], "running");
  cycle(20);  // it runs a while

  const util::Time noticed = clock_.now();
  ASSERT_TRUE(plane_->interrupt_node("v100-spot-1", admin_).is_ok());
  cycle(0);
  EXPECT_EQ(job(id)["state"], "preempting");
  ASSERT_EQ(exec_.notice_bodies.size(), 1u);
  const auto notice = nlohmann::json::parse(exec_.notice_bodies[0]);
  EXPECT_EQ(notice["deadline"], util::format_time(noticed + util::seconds(10)));
  EXPECT_NEAR(notice["graceSeconds"].get<double>(), 10, 0.01);
  exec_.exit(1000, 75);  // saved a checkpoint and asked to be requeued
  cycle();
  auto j = job(id);
  EXPECT_EQ(j["state"], "pending") << j.dump();
  EXPECT_EQ(j["attempt"], 2);
  EXPECT_EQ(j["attempts"][0]["outcome"], "interrupted");
  const nlohmann::json events = *plane_->job_events(util::JobId(id), 0, admin_);
  bool interrupted = false;
  for (const auto& e : events["items"]) interrupted = interrupted || e["type"] == "Interrupted";
  EXPECT_TRUE(interrupted) << events.dump();

  // The replacement comes from another zone: the reclaimed one is blocked.
  for (int i = 0; i < 12 && exec_.launches.size() < 2; ++i) cycle();
  ASSERT_EQ(exec_.launches.size(), 2u) << plane_->nodes().dump();
  EXPECT_EQ(exec_.launches[1].visible_devices, std::vector<std::string>{"GPU-sim-v100-spot-2-0"});
  std::string second_zone;
  for (const auto& n : cloud_nodes())
    if (n["name"] == "v100-spot-2") second_zone = n["zone"];
  EXPECT_FALSE(second_zone.empty());
  EXPECT_NE(second_zone, first_zone);
  EXPECT_EQ(job(id)["failures"], 0);
  cycle(30);
  exec_.exit(1001, 0);
  cycle();
  EXPECT_EQ(job(id)["state"], "succeeded");

  // Idle past its timeout (30 s): released, then gone.
  for (int i = 0; i < 10; ++i) cycle(5);
  EXPECT_TRUE(cloud_nodes().empty()) << plane_->nodes().dump();

  auto cost = plane_->cost("", "-1d", "", admin_);
  ASSERT_TRUE(cost.is_ok()) << cost.status().to_string();
  const auto& c = *cost;
  ASSERT_EQ(c["jobs"].size(), 1u) << c.dump();
  const auto& jc = c["jobs"][0];
  EXPECT_EQ(jc["team"], "vision");
  EXPECT_GT(jc["cost_usd"].get<double>(), 0);
  EXPECT_GT(jc["lost_gpu_hours"].get<double>(), 0);  // no checkpoint on disk: the whole attempt
  EXPECT_EQ(jc["interruptions"], 1);
  const double bill = c["total"]["cost_usd"].get<double>();
  EXPECT_NEAR(jc["cost_usd"].get<double>() + c["total"]["idle_cost_usd"].get<double>(), bill, 1e-9);
  // Two nodes of 0.50 and 0.60 $/h over about a minute and a half in all.
  EXPECT_GT(bill, 0.005);
  EXPECT_LT(bill, 0.05);

  // A restart reads the records back: the same bill.
  plane_.reset();
  open_plane();
  auto again = plane_->cost("", "-1d", "", admin_);
  ASSERT_TRUE(again.is_ok());
  EXPECT_NEAR((*again)["total"]["cost_usd"].get<double>(), bill, 1e-9);
}

TEST_F(CapacityTest, TeamOverItsBudgetWaitsWithBudgetExhausted) {
  ServerConfig c = config();
  auto teams = parse_server_config(
      "teams:\n  - {name: vision, budget: {usd: 0.001, period: day}}\n", "t.yaml");
  ASSERT_TRUE(teams.is_ok()) << teams.status().to_string();
  c.teams = teams->teams;
  auto p = ControlPlane::open({.state_dir = dir_ / "state", .config = c},
                              ControlPlane::nodes_from_devices({}), exec_, clock_);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  plane_ = std::move(*p);
  auto spec = [](const std::string& name) {
    return "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: " + name +
           "}\nspec:\n  team: vision\n  template:\n    command: [train]\n"
           "    resources: {limits: {nvidia.com/gpu: 1}}\n";
  };
  ASSERT_TRUE(plane_->submit(spec("first"), "a.yaml", admin_).is_ok());
  for (int i = 0; i < 12 && exec_.launches.empty(); ++i) cycle();
  ASSERT_EQ(exec_.launches.size(), 1u);
  for (int i = 0; i < 12; ++i) cycle(10);  // 2 minutes at 0.50 $/h: about 0.017 $
  auto second = plane_->submit(spec("second"), "b.yaml", admin_);
  ASSERT_TRUE(second.is_ok());
  cycle();
  cycle();
  const auto j = job((*second)["id"].get<int64_t>());
  EXPECT_EQ(j["state"], "pending");
  EXPECT_NE(j.dump().find("budget"), std::string::npos) << j.dump();
  EXPECT_EQ(exec_.launches.size(), 1u);
}

TEST_F(CapacityTest, TeamTokenSeesOnlyItsOwnCost) {
  open_plane();
  Principal vision{.team = "vision", .name = "v"};
  EXPECT_EQ(plane_->cost("nlp", "", "", vision).status().code(),
            util::StatusCode::PermissionDenied);
  auto c = plane_->cost("", "", "", vision);
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ((*c)["scope"], "team");
  EXPECT_TRUE((*c)["pools"].empty());
  EXPECT_EQ(plane_->cost("", "yesterday", "", admin_).status().code(),
            util::StatusCode::InvalidArgument);
  EXPECT_EQ(plane_->interrupt_node("v100-spot-1", vision).status().code(),
            util::StatusCode::PermissionDenied);
}

}  // namespace
}  // namespace trainyard::server
