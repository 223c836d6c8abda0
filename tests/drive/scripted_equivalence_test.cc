// The same scripted workload run by the simulator and by the server (a fake executor, a virtual
// clock): each job must start, be preempted and finish at the same times in both, under every
// policy both drivers offer. This is what holds the two drivers of sched::plan() to one
// behaviour: a field of the snapshot filled differently by one of them (attained service, the
// last attempt's length, queue times, arrival order) shows here as a job that starts at another
// time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "server/control_plane.h"
#include "sim/simulator.h"
#include "sim/workload.h"
#include "tests/drive/scripted_driver.h"
#include "tests/server/fake_executor.h"

namespace trainyard {
namespace {

constexpr int kNodes = 4;
constexpr int kGpusPerNode = 4;
constexpr int kGraceSeconds = 30;
// Each job's time limit (activeDeadlineSeconds) is its run time plus this: backfill reserves by
// it, and srtf orders the server's jobs by what is left of it.
constexpr int kLimitSlackSeconds = 60;

using drive_test::ScriptedJob;
using Outcome = drive_test::Timeline;

std::string describe(const std::vector<ScriptedJob>& script, const std::vector<Outcome>& o) {
  std::string out;
  for (size_t i = 0; i < o.size(); ++i) {
    out += fmt::format("  {:<4} start {:>5} finish {:>5} preempted {}\n", script[i].name,
                       o[i].first_start, o[i].finish, o[i].stops);
  }
  return out;
}

std::vector<Outcome> simulate(const std::vector<ScriptedJob>& script, const std::string& policy) {
  const sim::Workload w = drive_test::scripted_workload(script, kLimitSlackSeconds);
  auto cluster = sim::parse_cluster_yaml(
      fmt::format("pools:\n  - {{name: sim, gpu: H100-80GB, gpusPerNode: {}, nodes: {}, cpu: "
                  "\"128\", memory: 1Ti}}\nteams: [{{name: a}}, {{name: b}}]\n",
                  kGpusPerNode, kNodes),
      "cluster.yaml");
  EXPECT_TRUE(cluster.is_ok()) << cluster.status().to_string();
  if (!cluster.is_ok()) return {};
  sim::SimOptions o;
  o.policy.name = policy;
  o.grace_period = util::seconds(kGraceSeconds);
  o.restart_delay = util::Duration(0);
  o.full_invariant_check = true;
  auto r = sim::simulate(w, *cluster, o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return {};
  EXPECT_EQ(r->unfinished, 0);
  std::vector<Outcome> out(script.size());
  for (const sim::JobOutcome& j : r->jobs) {
    const size_t i = static_cast<size_t>(j.id.value() - 1);
    out[i].first_start = static_cast<int64_t>(util::to_seconds(j.first_start));
    out[i].finish = static_cast<int64_t>(util::to_seconds(j.finish));
    out[i].stops = j.preemptions;
  }
  return out;
}

std::vector<server::LocalNode> nodes() {
  std::vector<server::LocalNode> out;
  for (int n = 0; n < kNodes; ++n) {
    server::LocalNode node{.simulated = true};
    node.node.id = util::NodeId(n + 1);
    node.node.name = fmt::format("node-{}", n + 1);
    node.node.pool = "sim";
    node.node.gpu_model = "H100-80GB";
    node.node.gpu_count = kGpusPerNode;
    node.node.cpu = model::CpuMilli(128 * 1000);
    node.node.memory = model::gib(1024);
    node.node.labels[model::kLabelPool] = "sim";
    for (int g = 0; g < kGpusPerNode; ++g) {
      node.gpus.push_back({.index = g,
                           .uuid = fmt::format("GPU-sim-{}-{}", n + 1, g),
                           .name = "NVIDIA H100 80GB HBM3",
                           .model = "H100-80GB",
                           .memory = model::gib(80),
                           .simulated = true});
    }
    out.push_back(std::move(node));
  }
  return out;
}

std::string manifest(const ScriptedJob& s) {
  return fmt::format(
      "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {{name: {}}}\nspec:\n  team: {}\n"
      "  priorityClass: {}\n  workers: {}\n  preemptible: {}\n  activeDeadlineSeconds: {}\n"
      "  checkpoint: {{gracePeriodSeconds: {}}}\n"
      "  template:\n    command: [train]\n"
      "    resources: {{limits: {{nvidia.com/gpu: {}, cpu: 1, memory: 1Gi}}}}\n",
      s.name, s.team, s.priority_class, s.workers, s.preemptible ? "true" : "false",
      s.duration_s + kLimitSlackSeconds, kGraceSeconds, s.gpus);
}

// The server on the same cluster, reconciled every second of the script; a job's workers exit
// once it has run its duration in one attempt (no checkpoints: a preempted job starts over, as
// in the simulation).
std::vector<Outcome> serve(const std::vector<ScriptedJob>& script, const std::string& policy,
                           const std::filesystem::path& dir) {
  util::VirtualClock clock{util::kEpoch + util::seconds(1'800'000'000)};
  server::FakeExecutor exec;
  server::ControlPlaneOptions options{.state_dir = dir};
  options.config.policy.name = policy;
  auto plane = server::ControlPlane::open(options, nodes(), exec, clock);
  EXPECT_TRUE(plane.is_ok()) << plane.status().to_string();
  if (!plane.is_ok()) return {};
  std::vector<int64_t> ids;
  return drive_test::serve_script(**plane, exec, clock, script, manifest, kGraceSeconds, &ids);
}

class ScriptedEquivalence : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("ty-scripted-{}-{}", ::getpid(), GetParam());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void expect_same(const std::vector<ScriptedJob>& script) {
    const std::vector<Outcome> simulated = simulate(script, GetParam());
    const std::vector<Outcome> served = serve(script, GetParam(), dir_ / "state");
    ASSERT_EQ(simulated.size(), script.size());
    ASSERT_EQ(served.size(), script.size());
    std::printf("%s, simulated:\n%s", GetParam().c_str(), describe(script, simulated).c_str());
    EXPECT_EQ(simulated, served) << GetParam() << "\nsimulated:\n"
                                 << describe(script, simulated) << "served:\n"
                                 << describe(script, served);
  }

  std::filesystem::path dir_;
};

// Single GPUs, gangs across nodes, a queue that outgrows the cluster, two teams and three
// priority classes: enough for every policy to order, pack, backfill and preempt.
std::vector<ScriptedJob> mixed_script() {
  return {
      {"a1", 0, 300, 1, 4, "normal", true, "a"},   {"a2", 0, 200, 2, 4, "low", true, "a"},
      {"b1", 5, 400, 1, 2, "normal", true, "b"},   {"b2", 10, 120, 1, 1, "low", true, "b"},
      {"a3", 20, 250, 1, 4, "normal", true, "a"},  {"b3", 30, 100, 1, 2, "high", true, "b"},
      {"a4", 40, 90, 4, 2, "normal", false, "a"},  {"b4", 60, 500, 1, 1, "low", true, "b"},
      {"a5", 90, 60, 1, 1, "high", true, "a"},     {"b5", 120, 180, 2, 2, "normal", true, "b"},
      {"a6", 150, 300, 1, 3, "low", true, "a"},    {"b6", 200, 80, 1, 4, "high", false, "b"},
      {"a7", 260, 150, 1, 1, "normal", true, "a"}, {"b7", 400, 240, 3, 4, "normal", true, "b"},
  };
}

// Team a fills the cluster with long low-priority work; later arrivals (another team, higher
// priorities, short jobs) find every GPU held by jobs past their minimum run time (300 s), so
// the preemptive policies preempt, each by its own rule.
std::vector<ScriptedJob> preemption_script() {
  return {
      {"a1", 0, 1500, 2, 4, "low", true, "a"},     {"a2", 0, 1200, 1, 4, "low", true, "a"},
      {"a3", 0, 1800, 1, 2, "low", true, "a"},     {"a4", 0, 900, 1, 2, "normal", true, "a"},
      {"a5", 10, 700, 1, 4, "low", true, "a"},     {"b1", 400, 300, 1, 4, "high", true, "b"},
      {"b2", 420, 200, 2, 2, "normal", true, "b"}, {"b3", 450, 100, 1, 1, "normal", true, "b"},
      {"b4", 800, 600, 1, 4, "high", false, "b"},  {"a6", 900, 120, 1, 2, "high", true, "a"},
      {"b5", 1000, 400, 1, 2, "low", true, "b"},   {"b6", 1300, 60, 1, 1, "normal", true, "b"},
  };
}

TEST_P(ScriptedEquivalence, EveryJobStartsAndFinishesAtTheSameTimes) {
  expect_same(mixed_script());
}

TEST_P(ScriptedEquivalence, PreemptionsHappenAtTheSameTimes) {
  expect_same(preemption_script());
}

INSTANTIATE_TEST_SUITE_P(Policies, ScriptedEquivalence,
                         ::testing::Values("fifo", "backfill", "priority", "tiresias", "fair",
                                           "srtf", "goodput"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace trainyard
