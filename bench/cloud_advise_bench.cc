// Time to rank every offering of the bundled catalog for one request (goal C10 in the cost
// research: < 10 ms for about 5k rows). Loading the CSVs is outside the timed loop: a server or
// simulator loads the catalog once and ranks per request.
//   build/bench/cloud_advise_bench [--shared=DIR] [--benchmark_repetitions=5]
#include <cstdio>
#include <cstring>
#include <string>

#include <benchmark/benchmark.h>

#include "cloud/advise.h"
#include "cloud/catalog.h"

namespace trainyard::bench {
namespace {

std::string g_shared = TY_SHARED_DIR;

struct Data {
  cloud::Catalog catalog;
  cloud::ThroughputTable throughput;
};

const Data* data() {
  static const Data* d = [] {
    auto catalog = cloud::load_catalog(g_shared + "/catalog");
    auto gavel =
        cloud::ThroughputTable::load_gavel(g_shared + "/traces/gavel/simulation_throughputs.json");
    if (!catalog.is_ok() || !gavel.is_ok()) {
      std::fprintf(stderr, "cannot load shared data: %s %s\n", catalog.status().to_string().c_str(),
                   gavel.status().to_string().c_str());
      return static_cast<Data*>(nullptr);
    }
    return new Data{std::move(*catalog), std::move(*gavel)};  // lives for the process
  }();
  return d;
}

void rank(benchmark::State& state, cloud::AdviseRequest request) {
  const Data* d = data();
  if (d == nullptr) {
    state.SkipWithError("shared data missing (--shared=DIR)");
    return;
  }
  size_t ranked = 0;
  for (auto _ : state) {
    auto r = cloud::rank_offerings(d->catalog.offerings, d->throughput, request);
    ranked = r.is_ok() ? r->size() : 0;
    benchmark::DoNotOptimize(r);
  }
  state.counters["offerings"] = static_cast<double>(d->catalog.offerings.size());
  state.counters["ranked"] = static_cast<double>(ranked);
}

void BM_RankAllOnDemand1Gpu(benchmark::State& state) {
  rank(state, {});
}
void BM_RankAllSpot8x4(benchmark::State& state) {
  rank(state, {.gpus_per_worker = 8, .workers = 4, .purchase = cloud::PurchaseOption::Spot});
}
BENCHMARK(BM_RankAllOnDemand1Gpu)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RankAllSpot8x4)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace trainyard::bench

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--shared=", 9) == 0) trainyard::bench::g_shared = argv[i] + 9;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
