// The cluster views (model/api_cluster_views.h): nodes and queues read back what they write, with
// the documented keys, and a reply with a missing or ill-typed field is refused by its path.
#include "model/api_cluster_views.h"

#include <gtest/gtest.h>

#include "model/api_views.h"
#include "tests/model/api_round_trip.h"

namespace trainyard::model {
namespace {

using nlohmann::json;

NodeListView nodes() {
  NodeView local{.name = "vm",
                 .gpu_model = "H100-80GB",
                 .gpus = 2,
                 .gpus_in_use = 1,
                 .simulated = true,
                 .cpu_milli = 2000,
                 .memory_bytes = 25276026880,
                 .labels = {{"trainyard.dev/pool", "local"}},
                 .pool = "local",
                 .state = "ready",
                 .devices = {{.index = 0,
                              .uuid = "GPU-sim-0-H100-80GB",
                              .name = "Simulated H100-80GB",
                              .memory_bytes = 85899345920,
                              .jobs = {2, 3},
                              .shares = {{.job = 2, .worker = 0, .gpu_fraction = 0.5},
                                         {.job = 3,
                                          .worker = 1,
                                          .gpu_fraction = 1.0 / 7,
                                          .mig_profile = "1g.10gb",
                                          .mig_start = 6,
                                          .compute_slices = 1,
                                          .memory_slices = 1}}},
                             {.index = 1, .uuid = "GPU-sim-1-H100-80GB", .name = "Simulated"}}};
  NodeView slurm = local;
  slurm.name = "gpu-node-1";
  slurm.batch = BatchNodeView{
      .executor = "slurm", .address = "10.0.0.7", .gpus_held_outside = 1, .problem = "drained"};
  NodeView coming{.name = "v100-spot-1",
                  .gpu_model = "V100-16GB",
                  .gpus = 8,
                  .pool = "v100-spot",
                  .zone = "us-east-1a",
                  .state = "provisioning",
                  .price_per_hour = 7.344,
                  .cloud = true};
  return NodeListView{.items = {local, slurm, coming},
                      .pools = {{.name = "v100-spot",
                                 .kind = "spot",
                                 .provider = "simcloud",
                                 .instance_type = "p3.16xlarge",
                                 .region = "us-east-1",
                                 .gpu_model = "V100-16GB",
                                 .gpus_per_node = 8,
                                 .max_nodes = 4,
                                 .price_per_node_hour = 7.344,
                                 .interruptions = 2}}};
}

QueueListView queues() {
  QueueView research{.name = "research",
                     .weight = 2.0,
                     .quota = {{"H100-80GB", 2.0}},
                     .pending = 1,
                     .gpus_in_use = 0.5};
  QueueView vision{.name = "vision",
                   .cohort = "cv",
                   .running = 2,
                   .gpus_in_use = 3.0,
                   .standing = QueueStandingView{.usage = {{"H100-80GB", 3.0}},
                                                 .borrowed = {{"H100-80GB", 1.0}},
                                                 .fair_share = {.dominant_share = 0.75,
                                                                .weighted_share = 0.375,
                                                                .position = 2,
                                                                .of = 2}},
                   .budget = BudgetView{.period = "day", .budget_usd = 50, .spent_usd = 1.25}};
  return QueueListView{.policy = "fair", .items = {research, vision}};
}

TEST(ApiClusterViews, NodesRoundTrip) {
  EXPECT_EQ(round_trip(nodes()), nodes());
  EXPECT_EQ(round_trip(NodeListView{}), NodeListView{});
}

TEST(ApiClusterViews, NodesWriteTheDocumentedKeys) {
  const json j = to_json(nodes());
  const json& local = j["items"][0];
  EXPECT_EQ(local["gpusInUse"], 1);
  EXPECT_FALSE(local.contains("executor"));
  EXPECT_EQ(local["devices"][0]["shares"][0], json::parse(R"({"job": 2, "worker": 0,
                                                             "gpuFraction": 0.5})"));
  EXPECT_EQ(local["devices"][1]["jobs"], json::array());
  EXPECT_EQ(j["items"][1]["problem"], "drained");
  EXPECT_EQ(j["items"][2]["devices"], json::array());
  EXPECT_EQ(j["pools"][0]["instanceType"], "p3.16xlarge");
}

TEST(ApiClusterViews, QueuesRoundTrip) {
  EXPECT_EQ(round_trip(queues()), queues());
  const json j = to_json(queues());
  EXPECT_TRUE(j["items"][0]["budget"].is_null());
  EXPECT_FALSE(j["items"][0].contains("fairShare"));
  EXPECT_EQ(j["items"][1]["lent"], json::object());
  EXPECT_EQ(j["items"][1]["fairShare"]["position"], 2);
}

TEST(ApiClusterViews, MissingOrIllTypedFieldIsNamed) {
  json j = to_json(nodes());
  j["items"][0]["devices"][0]["shares"][1].erase("worker");
  EXPECT_EQ(view_from_json<NodeListView>(j).status().message(),
            "field 'items[0].devices[0].shares[1].worker' is missing (expected an integer)");
  j = to_json(queues());
  j["items"][1]["quota"]["H100-80GB"] = "2";
  EXPECT_EQ(view_from_json<QueueListView>(j).status().message(),
            "field 'items[1].quota.H100-80GB' is a string, expected a number");
}

}  // namespace
}  // namespace trainyard::model
