#include <gtest/gtest.h>

#include "model/slurm_conf.h"
#include "model/slurm_hostlist.h"

namespace trainyard::model {
namespace {

::testing::AssertionResult fails_with(const util::Result<ClusterConfig>& r,
                                      const std::string& part) {
  if (r.is_ok()) return ::testing::AssertionFailure() << "parsed, expected an error";
  if (r.status().message().find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << r.status().message() << "\" lacks \"" << part << "\"";
}

const Node* find_node(const ClusterConfig& c, const std::string& name) {
  for (const Node& n : c.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

TEST(SlurmHostlist, ExpandsRangesListsPaddingAndProducts) {
  auto names = expand_hostlist("n[1-3,7],gpu[08-10],login,a[1-2]b[1-2]", 100);
  ASSERT_TRUE(names.is_ok()) << names.status().to_string();
  const std::vector<std::string> want = {"n1",    "n2",    "n3",   "n7",   "gpu08", "gpu09",
                                         "gpu10", "login", "a1b1", "a1b2", "a2b1",  "a2b2"};
  EXPECT_EQ(*names, want);
}

TEST(SlurmHostlist, RefusesBadExpressionsAndHugeRanges) {
  for (const char* bad :
       {"n[1-", "n1]", "n[]", "n[3-1]", "n[a-b]", "n[[1]]", "a,,b", ",", "n[1-1000]"}) {
    EXPECT_FALSE(expand_hostlist(bad, 100).is_ok()) << bad;
  }
  EXPECT_FALSE(expand_hostlist("a[1-100]b[1-100]", 1000).is_ok());
}

constexpr const char* kConf = R"(# A small site
ClusterName=tiny
SlurmctldHost=ctl01
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
nodename=DEFAULT CPUs=64 RealMemory=512000 State=UNKNOWN
NodeName=gpu[01-02] Gres=gpu:nvidia_a100-sxm4-80gb:8 Feature=a100,ib
NodeName=v1,v2 Gres=gpu:v100:4,mps:400 Sockets=2 CoresPerSocket=10 ThreadsPerCore=2 \
    RealMemory=192000 Features="v100,old"   # continued line
NodeName=cpu1 CPUs=32
PartitionName=DEFAULT MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=gpu[01-02],v[1-2] Default=YES
partitionname=all Nodes=ALL
PartitionName=empty
)";

TEST(SlurmConf, ReadsNodesDefaultsGresFeaturesAndPartitions) {
  auto c = parse_slurm_conf(kConf, "slurm.conf");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->name, "tiny");
  ASSERT_EQ(c->nodes.size(), 5u);
  EXPECT_EQ(c->total_gpus(), 8 * 2 + 4 * 2);
  const Node* gpu01 = find_node(*c, "gpu01");
  ASSERT_NE(gpu01, nullptr);
  EXPECT_EQ(gpu01->id, util::NodeId(1));
  EXPECT_EQ(gpu01->gpu_model, "A100-80GB");
  EXPECT_EQ(gpu01->gpu_count, 8);
  EXPECT_EQ(gpu01->cpu, CpuMilli(64000));
  EXPECT_EQ(gpu01->memory, mib(512000));
  EXPECT_EQ(gpu01->labels.at("a100"), "true");
  EXPECT_EQ(gpu01->labels.at("ib"), "true");
  EXPECT_EQ(gpu01->labels.at("slurm.partition/gpu"), "true");
  EXPECT_EQ(gpu01->labels.at("slurm.partition/all"), "true");
  const Node* v2 = find_node(*c, "v2");
  ASSERT_NE(v2, nullptr);
  EXPECT_EQ(v2->gpu_model, "V100-16GB");
  EXPECT_EQ(v2->gpu_count, 4);
  EXPECT_EQ(v2->cpu, CpuMilli(40000));
  EXPECT_EQ(v2->memory, mib(192000));
  EXPECT_EQ(v2->labels.at("old"), "true");
  const Node* cpu1 = find_node(*c, "cpu1");
  ASSERT_NE(cpu1, nullptr);
  EXPECT_EQ(cpu1->gpu_count, 0);
  EXPECT_EQ(cpu1->cpu, CpuMilli(32000));
  EXPECT_FALSE(cpu1->labels.contains("slurm.partition/gpu"));
  EXPECT_EQ(cpu1->labels.at("slurm.partition/all"), "true");
}

TEST(SlurmConf, UntypedGpusNeedADefaultModel) {
  const std::string conf = "NodeName=n[1-2] Gres=gpu:4\n";
  EXPECT_TRUE(fails_with(parse_slurm_conf(conf, "s.conf"),
                         "s.conf:1: NodeName=n[1-2]: Gres=gpu:N names no GPU type"));
  EXPECT_TRUE(fails_with(parse_slurm_conf(conf, "s.conf"), "--slurm-default-gpu"));
  auto c = parse_slurm_conf(conf, "s.conf", {.default_gpu_model = "h100"});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->nodes[1].gpu_model, "H100-80GB");
  EXPECT_TRUE(fails_with(parse_slurm_conf(conf, "s.conf", {.default_gpu_model = "nope"}),
                         "default GPU model 'nope'"));
}

TEST(SlurmConf, UnknownGresTypeSaysHowToMapIt) {
  const std::string conf = "\n\nNodeName=m1 Gres=gpu:mi250:8\n";
  auto r = parse_slurm_conf(conf, "s.conf");
  EXPECT_TRUE(fails_with(r, "s.conf:3: NodeName=m1: GRES type 'mi250' has no mapping"));
  EXPECT_TRUE(fails_with(r, "--slurm-gres-map mi250=MODEL"));
  auto c = parse_slurm_conf(conf, "s.conf", {.gres_types = {{"MI250", "A100-80GB"}}});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->nodes[0].gpu_model, "A100-80GB");
  EXPECT_TRUE(fails_with(parse_slurm_conf(conf, "s.conf", {.gres_types = {{"mi250", "x"}}}),
                         "mi250=x names no trainyard accelerator"));
}

TEST(SlurmConf, MixedGpuTypesOnOneNodeAreRefused) {
  EXPECT_TRUE(fails_with(parse_slurm_conf("NodeName=n1 Gres=gpu:a100:4,gpu:v100:2\n", "s.conf"),
                         "a trainyard node has one GPU model"));
  auto same = parse_slurm_conf("NodeName=n1 Gres=gpu:a100:4,gpu:A100:2\n", "s.conf");
  ASSERT_TRUE(same.is_ok()) << same.status().to_string();
  EXPECT_EQ(same->nodes[0].gpu_count, 6);
}

TEST(SlurmConf, LocatedErrorsForBadInput) {
  struct Bad {
    const char* conf;
    const char* part;
  };
  const Bad cases[] = {
      {"Include /etc/slurm/nodes.conf\n", "s.conf:1: Include lines are not followed"},
      {"SlurmctldHost=x\n", "s.conf: no NodeName lines"},
      {"NodeName=n1 CPUs=lots\n", "s.conf:1: cpus: expected a whole number"},
      {"NodeName=n1 RealMemory=-5\n", "s.conf:1: realmemory"},
      {"NodeName=n1 Gres=gpu:a100:17\n", "GPU count"},
      {"NodeName=n1 Gres=gpu:a100:9,gpu:a100:9\n", "at most 16"},
      {"NodeName=n1\nNodeName=n1\n", "s.conf:2: node 'n1' is defined twice"},
      {"NodeName=n[1-\n", "s.conf:1: NodeName=n[1-: unbalanced"},
      {"NodeName=n1\nPartitionName=p Nodes=n[1-2]\n", "s.conf:2: partition 'p' lists node 'n2'"},
      {"NodeName=n1 Feature=\"a,b\n", "s.conf:1: the value of Feature opens a '\"'"},
      {"NodeName= CPUs=2\n", "NodeName= needs node names"},
      {"NodeName=n[1-200000]\n", "at most 100000 nodes"},
  };
  for (const Bad& b : cases) EXPECT_TRUE(fails_with(parse_slurm_conf(b.conf, "s.conf"), b.part));
}

TEST(SlurmConf, CommentsCrlfAndEscapedHashes) {
  auto c = parse_slurm_conf("NodeName=n1 Feature=a\\#b # comment\r\n#NodeName=n2\r\n", "s.conf");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_EQ(c->nodes.size(), 1u);
  EXPECT_TRUE(c->nodes[0].labels.contains("a#b"));
  EXPECT_EQ(c->nodes[0].cpu, CpuMilli(1000));  // Slurm's default of 1 CPU
}

TEST(SlurmConf, TheExampleSlurmConfParses) {
  auto c = load_slurm_conf(std::string(TY_SOURCE_DIR) + "/examples/clusters/slurm.conf");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->nodes.size(), 7u);
  EXPECT_EQ(c->total_gpus(), 4 * 8 + 2 * 4);
}

TEST(SlurmConf, RecognizesSlurmConfPaths) {
  EXPECT_TRUE(is_slurm_conf_path("/etc/slurm/slurm.conf"));
  EXPECT_TRUE(is_slurm_conf_path("site.conf"));
  EXPECT_FALSE(is_slurm_conf_path("cluster.yaml"));
  EXPECT_FALSE(is_slurm_conf_path("conf/cluster.yaml"));
}

}  // namespace
}  // namespace trainyard::model
