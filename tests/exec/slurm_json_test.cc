// Slurm's JSON answers as read from a real Slurm 22.05 (files under tests/exec/data/slurm/,
// captured on the loopback cluster of scripts/slurm-cluster), and the newer schema's shapes.
#include "exec/slurm_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "exec/slurm_executor.h"

namespace trainyard::exec {
namespace {

std::string read_data(const std::string& name) {
  std::ifstream in(std::string(TY_SOURCE_DIR) + "/tests/exec/data/slurm/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const SlurmJob* by_id(const std::vector<SlurmJob>& jobs, int64_t id) {
  for (const auto& j : jobs)
    if (j.id == id) return &j;
  return nullptr;
}

TEST(SlurmJson, SqueueOf2205) {
  auto jobs = parse_squeue_json(read_data("squeue-mixed.json"));
  ASSERT_TRUE(jobs.is_ok()) << jobs.status().to_string();
  ASSERT_GE(jobs->size(), 20u);
  const SlurmJob* exit75 = by_id(*jobs, 2);
  ASSERT_NE(exit75, nullptr);
  EXPECT_EQ(exit75->state, "FAILED");
  EXPECT_EQ(exit75->exit_code, 75) << "22.05 writes the wait status 19200";
  EXPECT_EQ(exit75->exit_signal, 0);
  const SlurmJob* killed = by_id(*jobs, 8);
  ASSERT_NE(killed, nullptr);
  EXPECT_EQ(killed->state, "CANCELLED");
  EXPECT_EQ(killed->exit_signal, 9);
  // A heterogeneous job: two records, the second names the first as its leader.
  const SlurmJob* het1 = by_id(*jobs, 15);
  ASSERT_NE(het1, nullptr);
  EXPECT_EQ(het1->het_job_id, 14);
  EXPECT_EQ(het1->het_job_offset, 1);
  EXPECT_EQ(het1->nodes, "n2");
  ASSERT_EQ(het1->gpus_per_node.size(), 1u);
  EXPECT_EQ(het1->gpus_per_node[0], 1);
  const SlurmJob* pending = by_id(*jobs, 16);
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(pending->state, "PENDING");
  EXPECT_EQ(pending->reason, "Resources");
  EXPECT_TRUE(pending->nodes.empty());
}

TEST(SlurmJson, SinfoOf2205) {
  auto nodes = parse_slurm_nodes_json(read_data("sinfo-drain-down.json"));
  ASSERT_TRUE(nodes.is_ok()) << nodes.status().to_string();
  ASSERT_EQ(nodes->size(), 2u);
  const SlurmNodeInfo& n1 = (*nodes)[0];
  EXPECT_EQ(n1.name, "n1");
  EXPECT_EQ(n1.state, "MIXED");
  ASSERT_EQ(n1.flags.size(), 1u);
  EXPECT_EQ(n1.flags[0], "DRAIN");
  EXPECT_EQ(n1.cpus, 8);
  EXPECT_EQ(n1.real_memory_mb, 8000);
  EXPECT_EQ(n1.address, "127.0.0.1");
  EXPECT_EQ(n1.gres, "gpu:h100:2");
  ASSERT_EQ(n1.partitions.size(), 1u);
  EXPECT_EQ(n1.partitions[0], "gpu");
  auto used = parse_gres_gpus(n1.gres_used);
  ASSERT_EQ(used.size(), 1u);
  EXPECT_EQ(used[0].count, 1);
  EXPECT_EQ(used[0].indices, std::vector<int>{0});
}

TEST(SlurmJson, NewerSchemaShapes) {
  // 23.02+: states are arrays, numbers are {"set", "number"} objects, exit_code an object.
  const std::string squeue = R"js({"jobs": [{"job_id": {"set": true, "number": 7},
    "job_state": ["RUNNING", "COMPLETING"], "state_reason": "None", "nodes": "gpu[01-02]",
    "het_job_id": {"set": true, "number": 0}, "comment": "trainyard:abc:12:3",
    "exit_code": {"status": ["EXITED"], "return_code": {"set": true, "number": 75}},
    "gres_detail": ["gpu:a100:4(IDX:0-3)", "gpu:a100:2(IDX:0,2)"]}], "errors": []})js";
  auto jobs = parse_squeue_json(squeue);
  ASSERT_TRUE(jobs.is_ok()) << jobs.status().to_string();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].id, 7);
  EXPECT_EQ((*jobs)[0].state, "RUNNING");
  EXPECT_EQ((*jobs)[0].exit_code, 75);
  EXPECT_EQ((*jobs)[0].gpus_per_node, (std::vector<int>{4, 2}));
  auto tag = parse_slurm_job_comment((*jobs)[0].comment);
  ASSERT_TRUE(tag.has_value());
  EXPECT_EQ(tag->instance, "abc");
  EXPECT_EQ(tag->job, 12);
  EXPECT_EQ(tag->attempt, 3);
  const std::string sinfo = R"({"sinfo": [{"nodes": {"nodes": ["a"]}},
    {"name": "a", "state": ["IDLE", "DRAIN"], "cpus": {"number": 64}, "gres": "gpu:h100:8"}]})";
  auto nodes = parse_slurm_nodes_json(sinfo);
  ASSERT_TRUE(nodes.is_ok()) << nodes.status().to_string();
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].state, "IDLE");
  EXPECT_EQ((*nodes)[0].flags, std::vector<std::string>{"DRAIN"});
  EXPECT_EQ((*nodes)[0].cpus, 64);
}

TEST(SlurmJson, BadInputIsAnErrorNotACrash) {
  EXPECT_FALSE(parse_squeue_json("").is_ok());
  EXPECT_FALSE(parse_squeue_json("[1,2]").is_ok());
  EXPECT_FALSE(parse_squeue_json(R"({"jobs": 3})").is_ok());
  auto err = parse_squeue_json(
      R"({"jobs": [], "errors": [{"error": "Unable to contact slurm controller"}]})");
  ASSERT_FALSE(err.is_ok());
  EXPECT_NE(err.status().message().find("Unable to contact"), std::string::npos);
  EXPECT_FALSE(parse_slurm_nodes_json("{").is_ok());
  // Odd values are skipped, not trusted.
  auto odd = parse_squeue_json(R"({"jobs": [{"job_id": "x"}, 5, {"job_id": -3}]})");
  ASSERT_TRUE(odd.is_ok());
  EXPECT_TRUE(odd->empty());
}

TEST(SlurmJson, GresStrings) {
  auto g = parse_gres_gpus("gpu:h100:2(S:0-1),shard:8");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].type, "h100");
  EXPECT_EQ(g[0].count, 2);
  EXPECT_EQ(parse_gres_gpus("gpu:4")[0].count, 4);
  EXPECT_EQ(parse_gres_gpus("gpu:4")[0].type, "");
  EXPECT_EQ(parse_gres_gpus("gres/gpu:a100=3")[0].count, 3);
  EXPECT_TRUE(parse_gres_gpus("(null)").empty());
  EXPECT_EQ(parse_gres_gpus("gpu:h100:0(IDX:N/A)")[0].count, 0);
  EXPECT_EQ(parse_gres_gpus("gpu:h100:2,gpu:v100:1").size(), 2u);
}

TEST(SlurmExecutor, SbatchPinsEveryWorkerToItsNodeAndGpus) {
  SlurmOptions o;
  o.partition = "gpu";
  GangLaunch g{.name = "train"};
  // An uneven gang: 3 workers on n1, 1 on n2.
  for (int r = 0; r < 4; ++r)
    g.workers.push_back({.node = r < 3 ? "n1" : "n2",
                         .gpus = 1,
                         .cpu_milli = 1500,
                         .memory_bytes = int64_t{3} << 30});
  auto args = sbatch_arguments(o, g, "trainyard:x:1:1", "/shared/jobs/1/attempt-1");
  // One component per node (Slurm refuses two on one node), with that node's share.
  const std::vector<std::string> first = {"--nodelist=n1", "--nodes=1",         "--ntasks=3",
                                          "--gres=gpu:3",  "--cpus-per-task=2", "--mem=9216M"};
  const std::vector<std::string> second = {"--nodelist=n2", "--nodes=1",         "--ntasks=1",
                                           "--gres=gpu:1",  "--cpus-per-task=2", "--mem=3072M"};
  auto colon = std::find(args.begin(), args.end(), ":");
  ASSERT_NE(colon, args.end());
  EXPECT_EQ(std::count(args.begin(), args.end(), ":"), 1);
  EXPECT_NE(std::search(args.begin(), colon, first.begin(), first.end()), colon);
  EXPECT_NE(std::search(colon, args.end(), second.begin(), second.end()), args.end());
  auto count = [&](const std::string& s) { return std::count(args.begin(), args.end(), s); };
  EXPECT_EQ(count("--no-requeue"), 2) << "Slurm never retries an attempt on its own";
  EXPECT_EQ(count("--partition=gpu"), 2);
  EXPECT_EQ(count("--comment=trainyard:x:1:1"), 2);
  auto comps = slurm_components(g);
  ASSERT_EQ(comps.size(), 2u);
  EXPECT_EQ(comps[0].ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(comps[1].ranks, (std::vector<int>{3}));
}

}  // namespace
}  // namespace trainyard::exec
