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
#include "tests/server/fake_executor.h"

namespace trainyard {
namespace {

constexpr int kNodes = 4;
constexpr int kGpusPerNode = 4;
constexpr int kGraceSeconds = 30;
// Each job's time limit (activeDeadlineSeconds) is its run time plus this: backfill reserves by
// it, and srtf orders the server's jobs by what is left of it.
constexpr int kLimitSlackSeconds = 60;

struct ScriptedJob {
  std::string name;
  int submit_s = 0;
  int duration_s = 0;
  int workers = 1;
  int gpus = 1;  // per worker
  std::string priority_class = "normal";
  bool preemptible = true;
  std::string team = "a";
};

// When a job first started, when it finished, and how often it was preempted, in seconds from
// the start of the script.
struct Outcome {
  int64_t first_start = -1;
  int64_t finish = -1;
  int preemptions = 0;
  bool operator==(const Outcome&) const = default;
};

std::string describe(const std::vector<ScriptedJob>& script, const std::vector<Outcome>& o) {
  std::string out;
  for (size_t i = 0; i < o.size(); ++i) {
    out += fmt::format("  {:<4} start {:>5} finish {:>5} preempted {}\n", script[i].name,
                       o[i].first_start, o[i].finish, o[i].preemptions);
  }
  return out;
}

int priority_of(const std::string& cls) {
  if (cls == "high") return model::kPriorityHigh;
  if (cls == "low") return model::kPriorityLow;
  return model::kPriorityNormal;
}

std::vector<Outcome> simulate(const std::vector<ScriptedJob>& script, const std::string& policy) {
  sim::Workload w;
  for (const ScriptedJob& s : script) {
    sim::TraceJob j;
    j.name = s.name;
    j.submit = util::from_seconds(s.submit_s);
    j.duration = util::seconds(s.duration_s);
    j.spec.team = s.team;
    j.spec.workers = s.workers;
    j.spec.worker.gpus = s.gpus;
    j.spec.worker.cpu = model::CpuMilli(1000);
    j.spec.worker.memory = model::gib(1);
    j.spec.priority_class = s.priority_class;
    j.spec.priority = priority_of(s.priority_class);
    j.spec.preemptible = s.preemptible;
    j.has_priority = true;
    j.spec.runtime_limit = util::seconds(s.duration_s + kLimitSlackSeconds);
    j.has_runtime_limit = true;
    w.jobs.push_back(std::move(j));
  }
  sim::TraceOptions t;
  t.checkpoint_interval = util::Duration(0);
  t.runtime_limit = sim::RuntimeLimitMode::None;
  sim::finalize(w, t);
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
    out[i].preemptions = j.preemptions;
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
  const util::Time t0 = clock.now();
  server::FakeExecutor exec;
  server::ControlPlaneOptions options{.state_dir = dir};
  options.config.policy.name = policy;
  auto plane = server::ControlPlane::open(options, nodes(), exec, clock);
  EXPECT_TRUE(plane.is_ok()) << plane.status().to_string();
  if (!plane.is_ok()) return {};
  const server::Principal admin{.admin = true, .name = "test"};

  std::vector<Outcome> out(script.size());
  std::vector<int64_t> ids(script.size(), -1);
  std::map<int64_t, size_t> index_of;          // job id -> script index
  std::map<size_t, int64_t> attempt_start;     // script index -> start of its running attempt
  std::map<size_t, std::vector<int>> pids_of;  // script index -> its running attempt's workers
  std::map<int, size_t> job_of_pid;
  size_t launches_seen = 0;
  // A noticed worker saves for its whole grace period and exits 75 at its end, when the
  // simulator stops the job.
  std::map<int, int64_t> stop_at;  // pid -> when it exits
  size_t notices_seen = 0;
  size_t finished = 0;
  const int64_t horizon = 20'000;
  for (int64_t t = 0; t <= horizon && finished < script.size(); ++t) {
    clock.advance_to(t0 + util::seconds(t));
    for (size_t i = 0; i < script.size(); ++i) {
      if (script[i].submit_s != t) continue;
      auto r = (*plane)->submit(manifest(script[i]), "job.yaml", admin);
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
      if (!r.is_ok()) return {};
      ids[i] = (*r)["id"].get<int64_t>();
      index_of[ids[i]] = i;
    }
    std::vector<size_t> done;  // jobs whose workers exit 0 now
    for (auto& [i, start] : attempt_start) {
      if (t - start < script[i].duration_s) continue;
      for (int pid : pids_of[i]) exec.exit(pid, 0);
      done.push_back(i);
    }
    for (size_t i : done) attempt_start.erase(i);
    for (auto it = stop_at.begin(); it != stop_at.end();) {
      if (it->second > t) {
        ++it;
        continue;
      }
      const auto [pid, i] = std::pair{it->first, job_of_pid.at(it->first)};
      if (exec.status[pid].kind == exec::ExitKind::Running) exec.exit(pid, 75);
      if (auto a = attempt_start.find(i); a != attempt_start.end()) attempt_start.erase(a);
      it = stop_at.erase(it);
    }
    // Everything that happens at this second, as the simulator handles every event of one
    // time before it moves on: exits seen, GPUs freed, the plan carried out, until a cycle
    // starts and stops nothing more.
    for (int round = 0; round < 4; ++round) {
      EXPECT_TRUE((*plane)->reconcile_once().is_ok());
      const size_t before = launches_seen + notices_seen;
      for (; launches_seen < exec.launches.size(); ++launches_seen) {
        const exec::WorkerLaunch& l = exec.launches[launches_seen];
        const size_t i = index_of.at(l.job.value());
        const int pid = 1000 + static_cast<int>(launches_seen);
        if (l.rank == 0) {
          attempt_start[i] = t;
          pids_of[i].clear();
          if (out[i].first_start < 0) out[i].first_start = t;
        }
        pids_of[i].push_back(pid);
        job_of_pid[pid] = i;
      }
      for (; notices_seen < exec.notices.size(); ++notices_seen)
        stop_at.emplace(exec.notices[notices_seen].first, t + kGraceSeconds);
      if (round > 0 && launches_seen + notices_seen == before) break;
    }
    for (size_t i : done) {
      auto job = (*plane)->get_job(util::JobId(ids[i]), admin);
      EXPECT_TRUE(job.is_ok()) << job.status().to_string();
      if (!job.is_ok()) return {};
      EXPECT_EQ((*job)["state"], "succeeded") << script[i].name << " at t=" << t;
      out[i].finish = t;
      ++finished;
      for (const auto& a : (*job)["attempts"])
        out[i].preemptions += a["outcome"] == "preempted" || a["outcome"] == "requeued" ? 1 : 0;
    }
  }
  EXPECT_EQ(finished, script.size()) << "the server left jobs unfinished by t=" << horizon;
  return out;
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
