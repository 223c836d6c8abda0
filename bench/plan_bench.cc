// Times one sched::plan() call per policy on realistic snapshots at two scales, next to the
// textbook filter-then-score baseline (bench/naive_plan.h). Snapshots are built once, outside
// the timed loop. Target (docs/performance.md): median under 50 ms at 10k nodes / 100k jobs.
//   build-bench/bench/plan_bench [--benchmark_filter=10k]
#include <map>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "bench/bench_snapshot.h"
#include "bench/naive_plan.h"
#include "sched/plan.h"
#include "sched/policy.h"

namespace trainyard::bench {
namespace {

struct Scale {
  const char* name;
  int nodes;
  int pending;
};
constexpr Scale kScales[] = {{"1k_nodes_10k_jobs", 1000, 10000},
                             {"10k_nodes_100k_jobs", 10000, 100000}};

const sched::Snapshot& snapshot_for(const Scale& scale) {
  static std::map<int, std::unique_ptr<sched::Snapshot>> cache;
  auto& slot = cache[scale.nodes];
  if (!slot) {
    slot = std::make_unique<sched::Snapshot>(
        make_bench_snapshot({.nodes = scale.nodes, .pending = scale.pending, .seed = 42}));
  }
  return *slot;
}

void set_counters(benchmark::State& state, const sched::Snapshot& snap, size_t started) {
  state.counters["started"] = static_cast<double>(started);
  state.counters["jobs"] = static_cast<double>(snap.jobs.size());
}

void bm_plan(benchmark::State& state, std::string policy, Scale scale) {
  const sched::Snapshot& snap = snapshot_for(scale);
  const sched::PolicyConfig cfg{.name = policy};
  sched::Plan result;
  for (auto _ : state) {
    result = sched::plan(snap, cfg, 0);
    benchmark::DoNotOptimize(result);
  }
  set_counters(state, snap, result.starts.size());
  state.counters["preempted"] = static_cast<double>(result.preemptions.size());
}

void bm_naive(benchmark::State& state, bool memo, Scale scale) {
  const sched::Snapshot& snap = snapshot_for(scale);
  int started = 0;
  for (auto _ : state) {
    started = naive_plan(snap, {.memo = memo});
    benchmark::DoNotOptimize(started);
  }
  set_counters(state, snap, static_cast<size_t>(started));
}

void register_all() {
  for (const Scale& scale : kScales) {
    for (const sched::PolicyTraits& p : sched::policies()) {
      benchmark::RegisterBenchmark(fmt::format("plan/{}/{}", p.name, scale.name).c_str(), bm_plan,
                                   std::string(p.name), scale)
          ->Unit(benchmark::kMillisecond)
          ->Repetitions(5)
          ->ReportAggregatesOnly(true);
    }
    for (bool memo : {false, true}) {
      const char* name = memo ? "naive_memo" : "naive";
      benchmark::RegisterBenchmark(fmt::format("baseline/{}/{}", name, scale.name).c_str(),
                                   bm_naive, memo, scale)
          ->Unit(benchmark::kMillisecond)
          ->Repetitions(memo ? 5 : 3)
          ->ReportAggregatesOnly(true);
    }
  }
}

}  // namespace
}  // namespace trainyard::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  trainyard::bench::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
