#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "model/cluster_config.h"

namespace trainyard::model {
namespace {

TEST(ExampleClusters, EveryExampleParses) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TY_SOURCE_DIR) + "/examples/clusters")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    auto c = load_cluster_yaml(entry.path().string());
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    const bool cloud = std::any_of(c->pools.begin(), c->pools.end(),
                                   [](const model::Pool& p) { return p.autoscaled; });
    // A cloud cluster has no nodes until it buys them; its pools bound what it may buy.
    if (cloud) {
      for (const auto& p : c->pools) EXPECT_GT(p.max_nodes, 0) << entry.path() << " " << p.name;
    } else {
      EXPECT_GT(c->total_gpus(), 0) << entry.path();
    }
  }
  EXPECT_GE(files, 3);
}

TEST(ExampleClusters, HeteroClusterHasMigRacksAndQuotas) {
  auto c = load_cluster_yaml(std::string(TY_SOURCE_DIR) + "/examples/clusters/hetero-teams.yaml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->nodes.size(), 16u);
  EXPECT_EQ(c->total_gpus(), 64 + 16 + 24);
  int mig = 0;
  for (const auto& n : c->nodes) mig += n.mig_enabled ? 1 : 0;
  EXPECT_EQ(mig, 2);
  EXPECT_EQ(c->nodes[0].rack, "h100-rack0");
  EXPECT_EQ(c->nodes[4].rack, "h100-rack1");
  ASSERT_EQ(c->teams.size(), 3u);
  EXPECT_EQ(c->teams[0].quotas.at("H100-80GB").nominal.value(), 40000);
  EXPECT_EQ(c->teams[0].quotas.at("*").borrowing_limit.value(), 24000);
  EXPECT_EQ(c->teams[1].cohort, "ml");
}

TEST(ClusterYaml, ErrorsNameLineColumnAndFix) {
  auto bad = parse_cluster_yaml(
      "pools:\n  - name: a\n    gpu: T4\n    gpusPerNode: 4\n    nodes: 2\n    colour: red\n",
      "c.yaml");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("c.yaml:6:5: unknown field \"pools[0].colour\" (allowed: "),
            std::string::npos)
      << bad.status().message();
  auto mig = parse_cluster_yaml(
      "pools:\n  - name: a\n    gpu: T4\n    gpusPerNode: 4\n    nodes: 2\n    mig: true\n",
      "c.yaml");
  ASSERT_FALSE(mig.is_ok());
  EXPECT_NE(mig.status().message().find("T4 has no MIG support"), std::string::npos);
  auto yaml = parse_cluster_yaml("pools: [\n", "c.yaml");
  ASSERT_FALSE(yaml.is_ok());
  EXPECT_NE(yaml.status().message().find("not valid YAML"), std::string::npos);
  auto empty = parse_cluster_yaml("name: x\n", "c.yaml");
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("has no nodes"), std::string::npos);
}

}  // namespace
}  // namespace trainyard::model
