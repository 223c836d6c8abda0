#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <random>

#include "sim/metrics.h"
#include "sim/report.h"

namespace trainyard::sim {
namespace {

ClusterConfig one_node(int gpus, const std::string& model = "V100-16GB") {
  auto c = parse_cluster_yaml("pools:\n  - name: p\n    gpu: " + model +
                                  "\n    gpusPerNode: " + std::to_string(gpus) + "\n    nodes: 1\n",
                              "test.yaml");
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return *c;
}

struct J {
  double submit;
  double duration;
  int gpus;
  int priority = 0;
  std::string team = "t";
  double checkpoint = 0;
};

Workload make(const std::vector<J>& jobs) {
  Workload w;
  for (const J& j : jobs) {
    TraceJob t;
    t.submit = util::from_seconds(j.submit);
    t.duration = util::seconds_f(j.duration);
    t.spec.worker.gpus = j.gpus;
    t.spec.team = j.team;
    t.spec.priority = j.priority;
    t.has_priority = true;
    t.spec.checkpoint_interval = util::seconds_f(j.checkpoint);
    w.jobs.push_back(t);
  }
  TraceOptions o;
  o.checkpoint_interval = util::Duration(0);
  o.runtime_limit = RuntimeLimitMode::Exact;
  finalize(w, o);
  return w;
}

SimResult run(const Workload& w, const ClusterConfig& c, const std::string& policy) {
  SimOptions o;
  o.policy.name = policy;
  o.policy.min_runtime = util::Duration(0);  // these tests state exact preemption times
  o.full_invariant_check = true;
  o.restart_delay = util::seconds(10);
  o.grace_period = util::seconds(5);
  auto r = simulate(w, c, o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return *r;
}

double finish_of(const SimResult& r, int64_t id) {
  for (const auto& j : r.jobs) {
    if (j.id.value() == id) return util::to_seconds(j.finish);
  }
  return -1;
}

TEST(Simulator, FifoRunsJobsInArrivalOrderOnOneGpu) {
  const auto r = run(make({{0, 100, 1}, {10, 50, 1}, {20, 10, 1}}), one_node(1), "fifo");
  EXPECT_EQ(finish_of(r, 1), 100);
  EXPECT_EQ(finish_of(r, 2), 150);
  EXPECT_EQ(finish_of(r, 3), 160);
  const Summary s = summarize(r);
  EXPECT_NEAR(s.avg_jct_s, (100 + 140 + 140) / 3.0, 1e-9);
  EXPECT_NEAR(s.makespan_s, 160, 1e-9);
  EXPECT_NEAR(s.gpu_allocation, 1.0, 1e-9);
}

TEST(Simulator, SrtfBeatsFifoOnAverageJct) {
  const auto w = make({{0, 1000, 1}, {1, 10, 1}, {2, 10, 1}});
  const auto fifo = summarize(run(w, one_node(1), "fifo"));
  const auto srtf = summarize(run(w, one_node(1), "srtf"));
  EXPECT_LT(srtf.avg_jct_s, fifo.avg_jct_s);
  EXPECT_GT(srtf.preemptions_per_job, 0);
}

TEST(Simulator, PreemptedJobLosesWorkSinceCheckpointAndPaysRestartDelay) {
  // Low-priority job checkpoints every 30 s. The high one arrives at 100: notice at 100, stop
  // at 105 (grace 5 s); 105 s of work done, 90 s saved, 15 s lost. The high job runs 105..155.
  // The low one restarts at 155, pays 10 s of restart delay, needs 200 - 90 = 110 s more.
  const auto r = run(make({{0, 200, 1, 0, "t", 30}, {100, 50, 1, 1000}}), one_node(1), "priority");
  EXPECT_EQ(finish_of(r, 2), 155);
  EXPECT_EQ(finish_of(r, 1), 155 + 10 + 110);
  const auto& low = r.jobs[0].id.value() == 1 ? r.jobs[0] : r.jobs[1];
  EXPECT_EQ(low.preemptions, 1);
  EXPECT_EQ(util::to_seconds(low.lost_work), 15);
  EXPECT_EQ(util::to_seconds(low.restart_overhead), 10);
  EXPECT_NEAR(summarize(r).gpu_hours_lost, 25.0 / 3600, 1e-9);
}

TEST(Simulator, JobFinishingDuringGraceIsNotRestarted) {
  const auto r = run(make({{0, 102, 1}, {100, 50, 1, 1000}}), one_node(1), "priority");
  EXPECT_EQ(finish_of(r, 1), 102);
  EXPECT_EQ(finish_of(r, 2), 152);
  EXPECT_EQ(r.jobs[0].preemptions + r.jobs[1].preemptions, 0);
}

TEST(Simulator, TiresiasDemotesLongJobAndRunsShortOne) {
  // Job 1 crosses the first queue threshold (3200 GPU-s) at t=3200; job 2 (queue 0) has been
  // waiting and preempts it then.
  const auto r = run(make({{0, 10000, 1, 0, "t", 600}, {10, 100, 1}}), one_node(1), "tiresias");
  EXPECT_EQ(finish_of(r, 2), 3200 + 5 + 100);
  EXPECT_EQ(r.jobs[0].preemptions + r.jobs[1].preemptions, 1);
}

Workload random_workload(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::vector<J> jobs;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += std::exponential_distribution<double>(1.0 / 60)(rng);
    const int gpus = std::array<int, 5>{1, 1, 2, 4, 8}[rng() % 5];
    jobs.push_back({t, 60.0 * std::pow(10.0, std::uniform_real_distribution<double>(0, 2.5)(rng)),
                    gpus, static_cast<int>(rng() % 3) * 100, "team" + std::to_string(rng() % 4),
                    300});
  }
  return make(jobs);
}

TEST(Simulator, EveryJobFinishesUnderEveryPolicyWithInvariantsChecked) {
  auto c = parse_cluster_yaml(
      "pools:\n  - name: a\n    gpu: A100-80GB\n    gpusPerNode: 8\n    nodes: 3\n    "
      "nodesPerRack: 2\n",
      "c.yaml");
  ASSERT_TRUE(c.is_ok());
  const Workload w = random_workload(42, 300);
  for (const char* policy : {"fifo", "backfill", "srtf", "tiresias", "fair", "priority"}) {
    const SimResult r = run(w, *c, policy);
    EXPECT_EQ(r.jobs.size(), w.jobs.size()) << policy;
    EXPECT_EQ(r.unfinished, 0) << policy;
    const Summary s = summarize(r);
    EXPECT_LE(s.gpu_allocation, 1.0 + 1e-9) << policy;
    EXPECT_GT(s.gpu_allocation, 0.0) << policy;
  }
}

TEST(Simulator, SameSeedGivesByteIdenticalOutput) {
  auto c = parse_cluster_yaml(
      "pools:\n  - name: a\n    gpu: H100\n    gpusPerNode: 8\n    nodes: 2\n", "c.yaml");
  ASSERT_TRUE(c.is_ok());
  const Workload w = random_workload(7, 200);
  for (const char* policy : {"backfill", "tiresias", "fair"}) {
    const SimResult a = run(w, *c, policy);
    const SimResult b = run(w, *c, policy);
    EXPECT_EQ(jobs_csv(a), jobs_csv(b)) << policy;
    EXPECT_EQ(timeline_csv(a), timeline_csv(b)) << policy;
  }
}

TEST(Simulator, UnknownPolicyIsAnError) {
  SimOptions o;
  o.policy.name = "lottery";
  auto r = simulate(make({{0, 1, 1}}), one_node(1), o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("fifo, backfill"), std::string::npos);
}

TEST(Metrics, IsolatedTimeIsFifoOnTheTeamsWeightedSlice) {
  SimResult r;
  r.teams = {"a", "b", "idle"};
  r.team_weights = {1, 1, 5};  // "idle" has no jobs: it takes no slice
  r.capacity_milli = 2000;
  auto job = [](int team, double submit, double dur, int64_t milli) {
    JobOutcome j;
    j.team = team;
    j.submit = util::from_seconds(submit);
    j.duration = util::seconds_f(dur);
    j.gpu_milli = milli;
    return j;
  };
  r.jobs = {job(0, 0, 100, 1000), job(0, 0, 100, 1000), job(0, 50, 100, 1000),
            job(1, 0, 100, 2000)};
  const auto t = isolated_completion_times(r);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_DOUBLE_EQ(t[0], 100);  // team a has 1 GPU: its jobs run one after another
  EXPECT_DOUBLE_EQ(t[1], 200);
  EXPECT_DOUBLE_EQ(t[2], 250);  // submitted at 50, starts at 200
  EXPECT_DOUBLE_EQ(t[3], 200);  // 2 GPUs on a 1-GPU slice: twice as long
}

TEST(Metrics, FairnessFiguresFromRho) {
  SimResult r;
  r.policy = "x";
  r.teams = {"a", "b"};
  r.team_weights = {1, 1};
  r.capacity_milli = 2000;
  JobOutcome a;
  a.team = 0;
  a.gpu_milli = 1000;
  a.duration = util::seconds(100);
  a.first_start = util::from_seconds(0);
  a.finish = util::from_seconds(100);  // rho 1
  JobOutcome b = a;
  b.team = 1;
  b.first_start = util::from_seconds(300);
  b.finish = util::from_seconds(400);  // rho 4
  r.jobs = {a, b};
  const Summary s = summarize(r);
  EXPECT_DOUBLE_EQ(s.worst_ftf, 4);
  EXPECT_DOUBLE_EQ(s.unfair_share, 0.5);
  EXPECT_NEAR(s.jain_teams, (1 + 4) * (1 + 4) / (2.0 * (1 + 16)), 1e-12);
}

TEST(Metrics, PercentilesAndJain) {
  EXPECT_EQ(percentile({5, 1, 3, 2, 4}, 50), 3);
  EXPECT_EQ(percentile({5, 1, 3, 2, 4}, 100), 5);
  EXPECT_EQ(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 95), 10);
  EXPECT_DOUBLE_EQ(jain_index({2, 2, 2}), 1.0);
  EXPECT_NEAR(jain_index({1, 0, 0, 0}), 0.25, 1e-12);
}

}  // namespace
}  // namespace trainyard::sim

namespace trainyard::sim {
namespace {

TEST(Simulator, FairShareWithDecayServesTheTeamThatUsedLessLately) {
  // Team a ran alone for 1000 s; then a and b each submit a job at the same time on the one
  // GPU. Without decay the tie goes to a (listed first); with a half-life, a's past use puts
  // b first.
  const auto w = make({{0, 1000, 1, 0, "a"}, {1000, 100, 1, 0, "a"}, {1000, 100, 1, 0, "b"}});
  SimOptions o;
  o.policy.name = "fair";
  o.full_invariant_check = true;
  auto plain = simulate(w, one_node(1), o);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  EXPECT_LT(finish_of(*plain, 2), finish_of(*plain, 3));
  o.policy.fair.usage_half_life = util::seconds(3600);
  auto decayed = simulate(w, one_node(1), o);
  ASSERT_TRUE(decayed.is_ok()) << decayed.status().to_string();
  EXPECT_LT(finish_of(*decayed, 3), finish_of(*decayed, 2));
}

}  // namespace
}  // namespace trainyard::sim
