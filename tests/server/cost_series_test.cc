// GET /api/v1/cost/series and GET /api/v1/cost?format=csv on a simcloud fleet with a virtual
// clock: a job runs on a spot node across an hour boundary, the node is reclaimed (lost work),
// the job finishes on a second node; the hourly buckets sum to the cost report's totals (per
// team, per pool, idle, lost), a team token sees only its team, and the CSV has the report's
// numbers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fake_executor.h"
#include "server/config.h"
#include "server/control_plane.h"
#include "server/cost_series.h"

namespace trainyard::server {
namespace {

constexpr const char* kCatalog =
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,"
    "AvailabilityZone\n"
    "p3.2xlarge,V100,1.0,8.0,61.0,3.06,0.50,us-east-1,use1-az1\n"
    "p3.2xlarge,V100,1.0,8.0,61.0,3.06,0.60,us-east-1,use1-az2\n";

double sum(const nlohmann::json& a) {
  double s = 0;
  for (const auto& v : a) s += v.get<double>();
  return s;
}

class CostSeriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ty-costseries-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "catalog");
    std::ofstream(dir_ / "catalog" / "aws_gpu.csv") << kCatalog;
    auto c = parse_server_config(
        "capacity:\n  provider: simcloud\n  catalog: " + (dir_ / "catalog").string() +
            "\n  seed: 7\n  interruptionRatePerHour: 0\n"
            "  provisioningDelay: 5\n  noticeSeconds: 10\n"
            "  pools:\n    - {name: v100-spot, kind: spot, provider: aws,"
            " instanceType: p3.2xlarge, region: us-east-1, minNodes: 0,"
            " maxNodes: 2, idleTimeout: 30}\n",
        "c.yaml");
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    auto p = ControlPlane::open({.state_dir = dir_ / "state", .config = *c},
                                ControlPlane::nodes_from_devices({}), exec_, clock_);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    plane_ = std::move(*p);
  }
  void TearDown() override {
    plane_.reset();
    std::filesystem::remove_all(dir_);
  }
  void cycle(double seconds = 0.5) {
    clock_.advance_to(clock_.now() + util::seconds_f(seconds));
    ASSERT_TRUE(plane_->reconcile_once().is_ok());
  }

  std::filesystem::path dir_;
  // Ten minutes before a whole UTC hour, so the run spans two hourly buckets.
  util::VirtualClock clock_{util::kEpoch + util::seconds(1'800'000'000 / 3600 * 3600 + 3000)};
  FakeExecutor exec_;
  std::unique_ptr<ControlPlane> plane_;
  Principal admin_{.admin = true, .name = "test"};
};

TEST_F(CostSeriesTest, BucketsSumToTheReportAndTheCsvHasItsNumbers) {
  auto r = plane_->submit(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: train}\nspec:\n"
      "  preemptible: true\n  team: vision\n"
      "  template:\n    command: [train]\n    resources: {limits: {nvidia.com/gpu: 1}}\n",
      "job.yaml", admin_);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  for (int i = 0; i < 12 && exec_.launches.empty(); ++i) cycle();
  ASSERT_EQ(exec_.launches.size(), 1u);
  for (int i = 0; i < 50; ++i) cycle(10);  // past the hour
  ASSERT_TRUE(plane_->interrupt_node("v100-spot-1", admin_).is_ok());
  cycle(0);
  exec_.exit(1000, 75);
  cycle();
  for (int i = 0; i < 12 && exec_.launches.size() < 2; ++i) cycle();
  ASSERT_EQ(exec_.launches.size(), 2u);
  for (int i = 0; i < 10; ++i) cycle(10);

  auto report = plane_->cost("", "-1d", "", admin_);
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  auto s = plane_->cost_series("", "-1d", "", "hour", admin_);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const auto& rep = *report;
  const auto& ser = *s;
  EXPECT_EQ(ser["step"], "hour");
  EXPECT_EQ(ser["step_seconds"], 3600);
  ASSERT_GE(ser["times"].size(), 24u);
  EXPECT_LE(ser["times"].size(), 25u);
  EXPECT_EQ(ser["times"][1].get<int64_t>() - ser["times"][0].get<int64_t>(), 3600);
  EXPECT_EQ(ser["times"][0].get<int64_t>() % 3600, 0);
  // The run spans two hours: two buckets have spend.
  int spending = 0;
  for (const auto& v : ser["total_cost_usd"]) spending += v.get<double>() > 0;
  EXPECT_EQ(spending, 2) << ser.dump();
  const double bill = rep["total"]["cost_usd"].get<double>();
  EXPECT_GT(bill, 0);
  EXPECT_NEAR(sum(ser["total_cost_usd"]), bill, 1e-9);
  EXPECT_NEAR(sum(ser["idle_cost_usd"]), rep["total"]["idle_cost_usd"].get<double>(), 1e-9);
  EXPECT_GT(rep["total"]["lost_cost_usd"].get<double>(), 0);
  EXPECT_NEAR(sum(ser["lost_cost_usd"]), rep["total"]["lost_cost_usd"].get<double>(), 1e-12);
  EXPECT_NEAR(sum(ser["lost_gpu_hours"]), rep["total"]["lost_gpu_hours"].get<double>(), 1e-12);
  ASSERT_EQ(ser["teams"].size(), 1u);
  EXPECT_EQ(ser["teams"][0]["team"], "vision");
  EXPECT_NEAR(sum(ser["teams"][0]["cost_usd"]), rep["teams"][0]["cost_usd"].get<double>(), 1e-9);
  ASSERT_EQ(ser["pools"].size(), 1u);
  EXPECT_EQ(ser["pools"][0]["pool"], "v100-spot");
  EXPECT_NEAR(sum(ser["pools"][0]["cost_usd"]), rep["pools"][0]["cost_usd"].get<double>(), 1e-9);

  // A week by default steps by the day.
  auto week = plane_->cost_series("", "-7d", "", "", admin_);
  ASSERT_TRUE(week.is_ok());
  EXPECT_EQ((*week)["step"], "day");
  EXPECT_NEAR(sum((*week)["total_cost_usd"]), bill, 1e-9);

  // The CSV: a header, the total, the team, the pool and the job, with the JSON's numbers.
  const std::string csv = cost_csv(rep);
  std::istringstream in(csv);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << csv;
  EXPECT_EQ(lines[0],
            "kind,key,name,team,cost_usd,gpu_hours,idle_gpu_hours,idle_cost_usd,lost_gpu_hours,"
            "lost_cost_usd,interruptions");
  EXPECT_EQ(lines[1].rfind("total,,,," + rep["total"]["cost_usd"].dump() + ",", 0), 0u) << csv;
  EXPECT_EQ(lines[2].rfind("team,vision,,vision,", 0), 0u) << csv;
  EXPECT_EQ(lines[3].rfind("pool,v100-spot,,,", 0), 0u) << csv;
  EXPECT_EQ(lines[4].rfind("job,1,train,vision," + rep["jobs"][0]["cost_usd"].dump() + ",", 0), 0u)
      << csv;
  EXPECT_NE(lines[4].find("," + rep["jobs"][0]["lost_cost_usd"].dump() + ",1"), std::string::npos);
}

TEST_F(CostSeriesTest, ATeamSeesOnlyItsTeamAndBadParametersAreRefused) {
  Principal vision{.team = "vision", .name = "v"};
  EXPECT_EQ(plane_->cost_series("nlp", "", "", "", vision).status().code(),
            util::StatusCode::PermissionDenied);
  auto s = plane_->cost_series("", "-2h", "", "", vision);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ((*s)["scope"], "team");
  EXPECT_TRUE((*s)["pools"].empty());
  EXPECT_TRUE((*s)["idle_cost_usd"].empty());
  EXPECT_EQ(plane_->cost_series("", "", "", "week", admin_).status().code(),
            util::StatusCode::InvalidArgument);
  EXPECT_EQ(plane_->cost_series("", "-365d", "", "hour", admin_).status().code(),
            util::StatusCode::InvalidArgument);
  EXPECT_EQ(plane_->cost_series("", "yesterday", "", "", admin_).status().code(),
            util::StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace trainyard::server
