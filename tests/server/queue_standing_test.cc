// GET /api/v1/queues' standing of each team: usage per model, borrowed and lent quota within a
// cohort, the fair policy's order and the budget, from the control plane's real state.
#include "plane_fixture.h"
#include "server/config.h"

namespace trainyard::server {
namespace {

class QueueStandingTest : public PlaneTest {
 protected:
  void open_with(const std::string& yaml) {
    auto c = parse_server_config(yaml, "c.yaml");
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    open(*c);
  }
  nlohmann::json row(const std::string& team, const Principal& who) {
    const nlohmann::json queues = plane_->queues(who);
    for (const auto& r : queues["items"])
      if (r["name"] == team) return r;
    return nullptr;
  }
  nlohmann::json row(const std::string& team) { return row(team, admin_); }
};

constexpr const char* kCohort = R"(policy: fair
teams:
  - name: vision
    weight: 2
    cohort: research
    quota: {H100-80GB: 2}
    budget: {usd: 50, period: day}
  - name: nlp
    cohort: research
    quota: {H100-80GB: 2}
)";

TEST_F(QueueStandingTest, BorrowedAndLentWithinACohort) {
  open_with(kCohort);
  submit(job_yaml("big", 3, "  team: vision\n"));
  cycle();
  nlohmann::json vision = row("vision");
  nlohmann::json nlp = row("nlp");
  ASSERT_TRUE(vision.is_object());
  EXPECT_EQ(vision["running"], 1);
  EXPECT_EQ(vision["usage"], (nlohmann::json{{"H100-80GB", 3.0}}));
  EXPECT_EQ(vision["borrowed"], (nlohmann::json{{"H100-80GB", 1.0}}));
  EXPECT_EQ(vision["lent"], nlohmann::json::object());
  EXPECT_EQ(nlp["borrowed"], nlohmann::json::object());
  EXPECT_EQ(nlp["lent"], (nlohmann::json{{"H100-80GB", 1.0}}));
  // vision holds 3 of 4 GPUs at weight 2: share 0.75, weighted 0.375; nlp holds none.
  EXPECT_DOUBLE_EQ(vision["fairShare"]["dominantShare"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(vision["fairShare"]["weightedShare"].get<double>(), 0.375);
  EXPECT_EQ(vision["fairShare"]["position"], 2);
  EXPECT_EQ(nlp["fairShare"]["position"], 1);
  EXPECT_EQ(nlp["fairShare"]["of"], 2);
  EXPECT_EQ(vision["budget"]["period"], "day");
  EXPECT_DOUBLE_EQ(vision["budget"]["budgetUsd"].get<double>(), 50.0);
  EXPECT_TRUE(nlp["budget"].is_null());

  // nlp takes the last GPU and waits for two more (beyond its own quota: no reclaim).
  submit(job_yaml("one", 1, "  team: nlp\n"));
  submit(job_yaml("two", 2, "  team: nlp\n"));
  cycle();
  nlp = row("nlp");
  vision = row("vision");
  EXPECT_EQ(nlp["running"], 1);
  EXPECT_EQ(nlp["pending"], 1);
  EXPECT_EQ(nlp["lent"], (nlohmann::json{{"H100-80GB", 1.0}}));
  EXPECT_DOUBLE_EQ(nlp["fairShare"]["dominantShare"].get<double>(), 0.25);
  // 0.25 < 0.375: nlp is still served first.
  EXPECT_EQ(nlp["fairShare"]["position"], 1);
  EXPECT_EQ(vision["fairShare"]["position"], 2);
}

TEST_F(QueueStandingTest, ATeamTokenSeesItsOwnRowOnly) {
  open_with(kCohort);
  submit(job_yaml("big", 3, "  team: vision\n"));
  cycle();
  const Principal nlp_token{.team = "nlp", .name = "t"};
  const auto items = plane_->queues(nlp_token)["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["name"], "nlp");
  EXPECT_EQ(items[0]["lent"], (nlohmann::json{{"H100-80GB", 1.0}}));
}

TEST_F(QueueStandingTest, EqualSharesUnderFairWithoutQuotas) {
  // No quotas: the fair policy gives each team half of the 4 GPUs, all in one cohort.
  open_with("policy: fair\nteams:\n  - name: a\n  - name: b\n");
  submit(job_yaml("wide", 3, "  team: a\n"));
  cycle();
  EXPECT_EQ(row("a")["borrowed"], (nlohmann::json{{"H100-80GB", 1.0}, {"*", 1.0}}));
  EXPECT_EQ(row("b")["lent"], (nlohmann::json{{"H100-80GB", 1.0}, {"*", 1.0}}));
  EXPECT_EQ(row("b")["fairShare"]["position"], 1);
}

TEST_F(QueueStandingTest, NoBorrowingWithoutQuotasUnderFifo) {
  open_with("policy: fifo\n");
  submit(job_yaml("wide", 3));
  cycle();
  const auto r = row("default");
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["usage"], (nlohmann::json{{"H100-80GB", 3.0}}));
  EXPECT_EQ(r["borrowed"], nlohmann::json::object());
  EXPECT_EQ(r["lent"], nlohmann::json::object());
  EXPECT_EQ(r["fairShare"]["position"], 1);
}

}  // namespace
}  // namespace trainyard::server

namespace trainyard::server {
namespace {

TEST_F(PlaneTest, NodesListWhatEachJobHoldsOfAGpu) {
  // One MIG-enabled A100-40GB: a job asking for a 1g.5gb instance holds 1 of its 7 slices.
  std::vector<telemetry::GpuDevice> devices = {
      {.index = 0, .uuid = "GPU-0", .model = "A100-40GB", .mig_enabled = true, .simulated = true}};
  plane_.reset();
  auto p = ControlPlane::open({.state_dir = dir_}, ControlPlane::nodes_from_devices(devices), exec_,
                              clock_);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  plane_ = std::move(*p);
  const int64_t id = submit(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: m}\nspec:\n  template:\n"
      "    command: [train]\n    resources: {limits: {nvidia.com/mig-1g.5gb: 1}}\n");
  cycle();
  const auto dev = plane_->nodes()["items"][0]["devices"][0];
  EXPECT_EQ(dev["mig"], true);
  EXPECT_EQ(dev["jobs"], nlohmann::json::array({id}));
  ASSERT_EQ(dev["shares"].size(), 1u);
  const auto share = dev["shares"][0];
  EXPECT_EQ(share["job"], id);
  EXPECT_EQ(share["migProfile"], "1g.5gb");
  EXPECT_EQ(share["computeSlices"], 1);
  EXPECT_GE(share["migStart"].get<int>(), 0);
  EXPECT_NEAR(share["gpuFraction"].get<double>(), 1.0 / 7.0, 1e-9);
}

}  // namespace
}  // namespace trainyard::server
