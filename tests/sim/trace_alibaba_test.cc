#include <gtest/gtest.h>

#include <map>

#include "sim/workload.h"
#include "tests/sim/trace_test_util.h"

namespace trainyard::sim {
namespace {

using testing::contains;
using testing::shared_trace;
using testing::write_temp;

constexpr const char* kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

TEST(AlibabaTrace, LoadsTheDefaultPodListWithItsDocumentedCounts) {
  auto w = load_trace("alibaba", shared_trace("alibaba-gpu-v2023/openb_pod_list_default.csv"), {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->jobs.size(), 8152u);
  EXPECT_EQ(w->skipped_rows, 0);
  EXPECT_EQ(w->teams.size(), 4u);  // qos: LS, BE, Burstable, Guaranteed
  int cpu_only = 0, fractional = 0, whole = 0, eight_gpu = 0;
  for (const TraceJob& j : w->jobs) {
    EXPECT_EQ(j.spec.workers, 1);
    EXPECT_GT(j.duration.count(), 0);
    const auto& wr = j.spec.worker;
    if (wr.gpus == 0 && wr.gpu_milli.value() == 0) ++cpu_only;
    if (wr.gpu_milli.value() > 0) {
      ++fractional;
      EXPECT_LT(wr.gpu_milli.value(), 1000);
      EXPECT_EQ(wr.gpus, 0);
    }
    if (wr.gpus > 0) ++whole;
    if (wr.gpus == 8) ++eight_gpu;
  }
  // README: num_gpu 0:1,088 1:6,989 (3,078 of them fractional) 2:16 4:15 8:44.
  EXPECT_EQ(cpu_only, 1088);
  EXPECT_EQ(fractional, 3078);
  EXPECT_EQ(whole, 6989 - 3078 + 16 + 15 + 44);
  EXPECT_EQ(eight_gpu, 44);
}

TEST(AlibabaTrace, ReadsResourcesTimesAndNeverScheduledPods) {
  auto w = load_alibaba(shared_trace("alibaba-gpu-v2023/openb_pod_list_default.csv"), {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  std::map<std::string, const TraceJob*> by_name;
  for (const TraceJob& j : w->jobs) by_name[j.name] = &j;
  // openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
  const TraceJob& p1 = *by_name.at("openb-pod-0001");
  EXPECT_EQ(p1.spec.worker.cpu, model::CpuMilli(6000));
  EXPECT_EQ(p1.spec.worker.memory, model::mib(12288));
  EXPECT_EQ(p1.spec.worker.gpu_milli, model::GpuMilli(460));
  EXPECT_EQ(p1.spec.team, "LS");
  EXPECT_EQ(p1.submit, util::from_seconds(427061));
  EXPECT_EQ(p1.duration, util::seconds(12902960 - 427061));
  // Pending, never scheduled: openb-pod-0061 ... Pending,10001278,10001403, -> its lifetime.
  EXPECT_EQ(by_name.at("openb-pod-0061")->duration, util::seconds(125));
}

TEST(AlibabaTrace, LoadsTheGpuShareVariant) {
  auto w = load_alibaba(shared_trace("alibaba-gpu-v2023/openb_pod_list_gpushare100.csv"), {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->jobs.size(), 8152u);
  int fractional = 0;
  for (const TraceJob& j : w->jobs) fractional += j.spec.worker.gpu_milli.value() > 0;
  EXPECT_EQ(fractional, 7064);
}

TEST(AlibabaTrace, ReadsGpuSpecAsCanonicalAllowedModels) {
  const std::string path =
      write_temp("spec.csv", std::string(kPodHeader) +
                                 "p1,1000,1024,1,1000,V100M16|V100M32|G2,BE,Running,10,20,10\n"
                                 "p2,1000,1024,2,1000,,BE,Running,10,20,12\n"
                                 "p3,1000,1024,0,0,,LS,Succeeded,10,10,10\n");
  auto w = load_alibaba(path, {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_EQ(w->jobs.size(), 3u);
  EXPECT_EQ(w->jobs[0].spec.allowed_gpu_models,
            (std::vector<std::string>{"V100-16GB", "V100-32GB", "G2"}));
  EXPECT_EQ(w->jobs[1].spec.worker.gpus, 2);
  EXPECT_EQ(w->jobs[1].duration, util::seconds(8));
  EXPECT_EQ(w->jobs[2].duration, util::seconds(1));  // 0 s at 1-s resolution: read as 1 s
}

constexpr const char* kBadPods[] = {
    "p,1000,1024,2,500,,BE,Running,10,20,10",       // 5: a share over two GPUs
    "p,1000,1024,1,0,,BE,Running,10,20,10",         // 5: GPUs without a share
    "p,1000,1024,0,300,,BE,Running,10,20,10",       // 5: share without GPUs
    "p,1000,1024,1,1000,,BE,Running,10,5,10",       // 10: ends before it starts
    "p,1000,1024,1,1000,,BE,Running,10,20,5",       // 11: scheduled before created
    "p,1000,1024,1,1000,A||B,BE,Running,10,20,10",  // 6: empty model
    "p,1000,1024,1,1000,,,Running,10,20,10",        // 7: no qos
    "p,-1,1024,1,1000,,BE,Running,10,20,10",        // 2: negative CPU
    "p,1000,1024,17,1000,,BE,Running,10,20,10",     // 4: too many GPUs
};
constexpr int kBadPodColumns[] = {5, 5, 5, 10, 11, 6, 7, 2, 4};

TEST(AlibabaTrace, NamesLineAndColumnOfEachBadValue) {
  for (size_t i = 0; i < std::size(kBadPods); ++i) {
    const std::string path = write_temp("bad_pod.csv", std::string(kPodHeader) +
                                                           "ok,1000,1024,1,"
                                                           "1000,,BE,Running,1,2,1\n" +
                                                           kBadPods[i] + "\n");
    auto w = load_alibaba(path, {});
    ASSERT_FALSE(w.is_ok()) << kBadPods[i];
    EXPECT_TRUE(contains(w.status().message(),
                         "bad_pod.csv:3:" + std::to_string(kBadPodColumns[i]) + ": column '"))
        << kBadPods[i];
  }
}

TEST(AlibabaTrace, SkipsAndCountsBadRowsWhenAsked) {
  std::string text = kPodHeader;
  for (const char* row : kBadPods) text += std::string(row) + "\n";
  text += "good,1000,1024,1,1000,,BE,Running,10,20,10\n";
  auto w = load_alibaba(write_temp("bad_pods.csv", text), {.skip_bad_rows = true});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->jobs.size(), 1u);
  EXPECT_EQ(w->skipped_rows, static_cast<int64_t>(std::size(kBadPods)));
}

TEST(AlibabaNodes, LoadsTheHeterogeneousCluster) {
  auto nodes = load_alibaba_nodes(shared_trace("alibaba-gpu-v2023/openb_node_list_all_node.csv"));
  ASSERT_TRUE(nodes.is_ok()) << nodes.status().to_string();
  EXPECT_EQ(nodes->size(), 1523u);
  int with_gpus = 0;
  int64_t gpus = 0;
  std::map<std::string, int> by_model;
  for (const model::Node& n : *nodes) {
    gpus += n.gpu_count;
    if (n.gpu_count > 0) {
      ++with_gpus;
      ++by_model[n.gpu_model];
    } else {
      EXPECT_EQ(n.gpu_model, "");
    }
  }
  EXPECT_EQ(with_gpus, 1213);
  EXPECT_EQ(gpus, 6212);
  // G2 549, T4 404, P100 134, V100M16 55, G3 39, V100M32 30, A10 2.
  EXPECT_EQ(by_model["G2"], 549);
  EXPECT_EQ(by_model["T4"], 404);
  EXPECT_EQ(by_model["V100-16GB"], 55);
  EXPECT_EQ(by_model["V100-32GB"], 30);
  EXPECT_EQ(by_model.size(), 7u);
  EXPECT_EQ(nodes->front().id, util::NodeId(1));
  EXPECT_EQ(nodes->front().cpu, model::CpuMilli(32000));
  EXPECT_EQ(nodes->front().memory, model::mib(262144));
}

TEST(AlibabaNodes, RefusesBadRowsWithLineAndColumn) {
  const std::string header = "sn,cpu_milli,memory_mib,gpu,model\n";
  struct Case {
    std::string rows, where;
  };
  for (const Case& c : {
           Case{"n1,64000,1024,2,\n", ":2:5: column 'model'"},
           Case{"n1,64000,1024,99,T4\n", ":2:4: column 'gpu'"},
           Case{"n1,64000,1024,2,T4\nn1,64000,1024,2,T4\n", ":3:1: column 'sn'"},
           Case{",64000,1024,2,T4\n", ":2:1: column 'sn'"},
           Case{"n1,lots,1024,2,T4\n", ":2:2: column 'cpu_milli'"},
       }) {
    auto nodes = load_alibaba_nodes(write_temp("nodes.csv", header + c.rows));
    ASSERT_FALSE(nodes.is_ok()) << c.rows;
    EXPECT_TRUE(contains(nodes.status().message(), "nodes.csv" + c.where));
  }
}

}  // namespace
}  // namespace trainyard::sim
