// Property tests of the preemptive policies at cluster scale: on random workloads with gangs,
// on random heterogeneous clusters, every job finishes and no job is preempted without bound.
// Also the simulator's watchdog, on a public workload where preemption without a minimum run
// time goes round in circles.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "sim/metrics.h"
#include "sim/simulator.h"
#include "sim/traces/common.h"
#include "sim/workload.h"

namespace trainyard::sim {
namespace {

struct RandomCase {
  ClusterConfig cluster;
  Workload workload;
  int smallest_node = 8;
};

// Two or three pools of different GPU models, 4 or 8 GPUs per node, 2-4 nodes each.
RandomCase random_case(uint64_t seed, int jobs) {
  std::mt19937_64 rng(seed);
  static const char* kModels[] = {"T4", "RTX-2080TI", "A100-40GB", "V100-16GB", "H100"};
  std::string yaml = "pools:\n";
  int smallest = 8;
  const int pools = 2 + static_cast<int>(rng() % 2);
  for (int p = 0; p < pools; ++p) {
    const int per_node = rng() % 2 ? 8 : 4;
    smallest = std::min(smallest, per_node);
    yaml += fmt::format(
        "  - name: p{}\n    gpu: {}\n    gpusPerNode: {}\n    nodes: {}\n    "
        "nodesPerRack: 2\n",
        p, kModels[(seed + p) % 5], per_node, 2 + rng() % 3);
  }
  auto cluster = parse_cluster_yaml(yaml, "random.yaml");
  EXPECT_TRUE(cluster.is_ok()) << cluster.status().to_string() << "\n" << yaml;
  Workload w;
  double t = 0;
  for (int i = 0; i < jobs; ++i) {
    t += std::exponential_distribution<double>(1.0 / 90)(rng);
    TraceJob j;
    j.submit = util::from_seconds(t);
    j.duration =
        util::seconds_f(60.0 * std::pow(10.0, std::uniform_real_distribution<>(0, 2.5)(rng)));
    // Gangs of up to 2 workers of up to a whole (smallest) node.
    const int per_worker = std::array<int, 4>{1, 2, 4, smallest}[rng() % 4];
    j.spec.worker.gpus = std::min(per_worker, smallest);
    j.spec.workers = rng() % 4 == 0 ? 2 : 1;
    j.spec.team = "team" + std::to_string(rng() % 3);
    j.spec.priority = static_cast<int>(rng() % 3) * 100;
    j.has_priority = true;
    j.spec.checkpoint_interval = util::seconds(std::array<int, 3>{0, 300, 1800}[rng() % 3]);
    if (j.spec.worker.gpus == 1 && rng() % 2 == 0) {  // elastic: goodput may resize it
      j.spec.min_workers = 1;
      j.spec.max_workers = j.spec.workers + static_cast<int>(rng() % 4);
    }
    w.jobs.push_back(std::move(j));
  }
  TraceOptions o;
  o.checkpoint_interval = util::Duration(0);
  o.runtime_limit = RuntimeLimitMode::Rounded;
  finalize(w, o);
  return {*cluster, std::move(w), smallest};
}

TEST(PreemptionProperty, EveryJobFinishesAndPreemptionsAreBoundedOnRandomHeterogeneousClusters) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const RandomCase c = random_case(seed, 250);
    for (const char* policy : {"srtf", "tiresias", "fair", "priority", "goodput"}) {
      SimOptions o;
      o.policy.name = policy;
      o.full_invariant_check = true;
      const std::string what = fmt::format("seed {} policy {}", seed, policy);
      auto r = simulate(c.workload, c.cluster, o);
      ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().message();
      EXPECT_EQ(r->unfinished, 0) << what;
      EXPECT_EQ(r->jobs.size(), c.workload.jobs.size()) << what;
      // The minimum run time bounds preemptions: each one ends an attempt that ran at least
      // min_runtime, so a job is preempted at most once per min_runtime of its time in the
      // system after its first start. A cycle breaks this at once.
      for (const JobOutcome& j : r->jobs) {
        const double span = util::to_seconds(j.finish - j.first_start);
        EXPECT_LE(j.preemptions, span / util::to_seconds(o.policy.min_runtime) + 1)
            << what << " job " << j.id.value();
      }
      EXPECT_LE(summarize(*r).preemptions_per_job, 20.0) << what;
    }
  }
}

const std::string kSia = std::string(TY_SHARED_DIR) + "/traces/sia-workloads/philly/workload-1.csv";

// The Sia paper's 64-GPU cluster of three GPU types.
ClusterConfig sia_cluster() {
  auto c = parse_cluster_yaml(
      "pools:\n"
      "  - {name: t4, gpu: T4, gpusPerNode: 4, nodes: 6}\n"
      "  - {name: rtx, gpu: RTX-2080TI, gpusPerNode: 8, nodes: 3}\n"
      "  - {name: a100, gpu: A100-40GB, gpusPerNode: 8, nodes: 2}\n",
      "sia.yaml");
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return *c;
}

// The shape the Sia jobs had when Tiresias livelocked on them: rigid gangs cut for 8-GPU
// servers (a 14-GPU job as 2 workers of 7), at the same speed on any GPUs.
void as_rigid_server_gangs(Workload& w) {
  for (TraceJob& j : w.jobs) {
    split_into_workers(int64_t{j.spec.workers} * j.spec.worker.gpus, 8, j.spec);
    j.spec.min_workers = j.spec.max_workers = 0;
    j.scaling.reset();
  }
}

// The first `max_jobs` jobs of the Sia workload, as rigid server gangs.
util::Result<Workload> sia_rigid_gangs(int64_t max_jobs) {
  TraceOptions t;
  t.max_jobs = max_jobs;
  auto w = load_trace("auto", kSia, t);
  if (w.is_ok()) as_rigid_server_gangs(*w);
  return w;
}

TEST(PreemptionProperty, TiresiasFinishesTheSiaWorkloadThatUsedToLivelock) {
  if (!std::filesystem::exists(kSia)) GTEST_SKIP() << kSia << " is not here";
  auto w = load_trace("auto", kSia, TraceOptions{});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  as_rigid_server_gangs(*w);
  SimOptions o;
  o.policy.name = "tiresias";
  auto r = simulate(*w, sia_cluster(), o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->jobs.size(), w->jobs.size());
  EXPECT_LE(summarize(*r).preemptions_per_job, 10.0);
}

// What livelocked before a job stopped preempting for GPUs that a starvation-promoted job
// would take (sched/preemption.cc): Tiresias with no minimum run time on 127 rigid gangs. It
// now finishes.
TEST(PreemptionProperty, TiresiasWithoutAMinimumRunTimeFinishesTheWorkloadThatCycled) {
  if (!std::filesystem::exists(kSia)) GTEST_SKIP() << kSia << " is not here";
  auto w = sia_rigid_gangs(127);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  SimOptions o;
  o.policy.name = "tiresias";
  o.policy.min_runtime = util::Duration(0);
  auto r = simulate(*w, sia_cluster(), o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->unfinished, 0);
  EXPECT_LE(summarize(*r).preemptions_per_job, 10.0);
}

// The watchdog's report when jobs were preempted since the last progress, on a run cut short on
// purpose (no workload here cycles any more): a high-priority job preempts a low one on the only
// GPU, and with a stall limit of 100 s the check at the end of its minimum run time fires.
TEST(PreemptionProperty, WatchdogNamesTheJobsPreemptedSinceTheLastProgress) {
  auto w = load_trace_from_text("csv",
                                "submit_time,duration,gpus,priority\n"
                                "0,100000,1,0\n"
                                "400,100000,1,1000\n",
                                "two.csv", TraceOptions{});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  auto c =
      parse_cluster_yaml("pools:\n  - {name: p, gpu: T4, gpusPerNode: 1, nodes: 1}\n", "one.yaml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  SimOptions o;
  o.policy.name = "priority";
  o.stall_limit = util::seconds(100);
  auto r = simulate(*w, *c, o);
  ASSERT_FALSE(r.is_ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("no job finished or saved a checkpoint for"), std::string::npos) << m;
  EXPECT_NE(m.find("jobs preempted since then: job 1 (1 GPUs, preempted 1 times)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("preemption cycle in policy 'priority'"), std::string::npos) << m;
}

// A run cut short by a stall limit of a minute after the last arrival, at a moment when no job
// was preempted since the last progress: the watchdog lists the jobs left and does not blame a
// preemption cycle.
TEST(PreemptionProperty, WatchdogBlamesNoPreemptionCycleWhenNoJobWasPreempted) {
  if (!std::filesystem::exists(kSia)) GTEST_SKIP() << kSia << " is not here";
  auto w = sia_rigid_gangs(127);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  SimOptions o;
  o.policy.name = "fifo";
  o.stall_limit = util::seconds(60);
  auto r = simulate(*w, sia_cluster(), o);
  ASSERT_FALSE(r.is_ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("no job finished or saved a checkpoint for"), std::string::npos) << m;
  EXPECT_NE(m.find("unfinished jobs: job "), std::string::npos) << m;
  EXPECT_NE(m.find("No job was preempted since then"), std::string::npos) << m;
  EXPECT_EQ(m.find("preemption cycle"), std::string::npos) << m;
}

TEST(PreemptionProperty, WatchdogStopsAClockThatDoesNotMove) {
  // A clock that stops is a scheduler bug no workload here produces, so this checks the check
  // itself: with a limit of 0 rounds it fires at the first event time and names the jobs.
  auto c =
      parse_cluster_yaml("pools:\n  - {name: p, gpu: T4, gpusPerNode: 1, nodes: 1}\n", "one.yaml");
  ASSERT_TRUE(c.is_ok());
  Workload w;
  for (int i = 0; i < 3; ++i) {
    TraceJob j;
    j.submit = util::from_seconds(0);
    j.duration = util::seconds(100);
    j.spec.worker.gpus = 1;
    w.jobs.push_back(j);
  }
  TraceOptions t;
  t.runtime_limit = RuntimeLimitMode::Exact;
  finalize(w, t);
  SimOptions o;
  o.policy.name = "fifo";
  o.same_time_limit = 0;
  auto r = simulate(w, *c, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("the simulated clock stopped at t=0s"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("job 1"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace trainyard::sim

namespace trainyard::sim {
namespace {

double avg_jct_h(const Workload& w, const ClusterConfig& c, const std::string& policy,
                 SimOptions o) {
  o.policy.name = policy;
  o.full_invariant_check = true;
  auto r = simulate(w, c, o);
  EXPECT_TRUE(r.is_ok()) << policy << ": " << r.status().message();
  if (!r.is_ok()) return 0;
  EXPECT_EQ(r->unfinished, 0) << policy;
  return summarize(*r).avg_jct_s / 3600;
}

TEST(GoodputPolicy, BeatsTiresiasAndFairOnTheSiaClusterOfThreeGpuTypes) {
  if (!std::filesystem::exists(kSia)) GTEST_SKIP() << kSia << " is not here";
  auto w = load_trace("auto", kSia, TraceOptions{});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  const double goodput = avg_jct_h(*w, sia_cluster(), "goodput", {});
  const double tiresias = avg_jct_h(*w, sia_cluster(), "tiresias", {});
  const double fair = avg_jct_h(*w, sia_cluster(), "fair", {});
  EXPECT_LT(goodput, 0.8 * tiresias) << goodput << " h vs tiresias " << tiresias << " h";
  EXPECT_LT(goodput, 0.8 * fair) << goodput << " h vs fair " << fair << " h";
}

// A job that can never fit does not keep goodput's rounds going: the run ends with it counted
// as unfinished (NeverFits), not in the watchdog.
TEST(GoodputPolicy, ARunWithAJobThatNeverFitsEnds) {
  auto w = load_trace_from_text("csv", "submit_time,duration,gpus,workers\n0,100,1,1\n10,100,8,2\n",
                                "nf.csv", TraceOptions{});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  auto c =
      parse_cluster_yaml("pools:\n  - {name: t4, gpu: T4, gpusPerNode: 4, nodes: 4}\n", "c.yaml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  SimOptions o;
  o.policy.name = "goodput";
  auto r = simulate(*w, *c, o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->unfinished, 1);
  EXPECT_EQ(r->unfinished_by_reason["NeverFits"], 1);
}

TEST(GoodputPolicy, BeatsTiresiasOnThePolluxTestbed) {
  const std::string trace =
      std::string(TY_SHARED_DIR) + "/traces/pollux-workloads/workloads/workload-6.csv";
  if (!std::filesystem::exists(trace)) GTEST_SKIP() << trace << " is not here";
  auto w = load_trace("auto", trace, TraceOptions{.checkpoint_interval = util::seconds(60)});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  auto c = parse_cluster_yaml("pools:\n  - {name: t4, gpu: T4, gpusPerNode: 4, nodes: 16}\n",
                              "pollux.yaml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  SimOptions o;
  o.restart_delay = util::seconds(30);
  const double goodput = avg_jct_h(*w, *c, "goodput", o);
  const double tiresias = avg_jct_h(*w, *c, "tiresias", o);
  EXPECT_LT(goodput, 0.9 * tiresias) << goodput << " h vs tiresias " << tiresias << " h";
}

// Adapting the batch epoch by epoch (gradient noise grows, so later epochs take larger
// batches) is what lets goodput reach Pollux's published average JCT; with the same profiles
// reduced to a whole-run average efficiency per batch it is measurably slower.
TEST(GoodputPolicy, AdaptingTheBatchEachEpochBeatsAWholeRunAverage) {
  const std::string trace =
      std::string(TY_SHARED_DIR) + "/traces/pollux-workloads/workloads/workload-6.csv";
  if (!std::filesystem::exists(trace)) GTEST_SKIP() << trace << " is not here";
  auto w = load_trace("auto", trace, TraceOptions{.checkpoint_interval = util::seconds(60)});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  Workload averaged = *w;
  for (TraceJob& j : averaged.jobs) {
    ASSERT_NE(j.scaling, nullptr);
    ASSERT_TRUE(j.scaling->has_epochs());
    auto m = std::make_shared<model::ScalingModel>(*j.scaling);
    m->epochs.clear();
    m->prepare();
    j.scaling = std::move(m);
  }
  auto c = parse_cluster_yaml("pools:\n  - {name: t4, gpu: T4, gpusPerNode: 4, nodes: 16}\n",
                              "pollux.yaml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  SimOptions o;
  o.restart_delay = util::seconds(30);
  o.save_on_notice = true;
  const double by_epoch = avg_jct_h(*w, *c, "goodput", o);
  const double whole_run = avg_jct_h(averaged, *c, "goodput", o);
  EXPECT_LT(by_epoch, 0.95 * whole_run) << by_epoch << " h vs " << whole_run << " h";
}

}  // namespace
}  // namespace trainyard::sim
