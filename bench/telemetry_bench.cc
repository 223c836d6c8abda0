// Cost of one GpuSampler::sample() call, the work the server does for every GPU reading: 8
// synthetic GPUs running mixed profiles, and the NVML sampler over the tests' fake driver (3 GPUs
// and 2 MIG devices; it measures trainyard's own overhead, not the real driver's) and, with
// --nvml, the NVML sampler over this machine's driver (libnvidia-ml.so.1, all its GPUs: our code
// plus the driver's calls). After each result it prints the share of one core that sampling once
// a second costs (CPU time / 1 s).
//   build/bench/telemetry_bench [--fake_nvml=PATH] [--nvml] [--benchmark_repetitions=5]
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "telemetry/gpu_sampler.h"

namespace trainyard::bench {
namespace {

constexpr int64_t kStartMs = 1'700'000'000'000;

#ifdef TY_FAKE_NVML
std::string g_fake_nvml = TY_FAKE_NVML;
#else
std::string g_fake_nvml;
#endif
bool g_real_nvml = false;

// The console output plus, per result, CPU time per sample() as % of one core at 1 Hz.
class CpuShareReporter : public benchmark::ConsoleReporter {
 public:
  CpuShareReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_Defaults : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred ||
          (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median")) {
        continue;
      }
      double seconds = run.GetAdjustedCPUTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
      fmt::print("  {}: {:.2f} us CPU per sample = {:.6f}% of one core at 1 Hz\n",
                 run.benchmark_name(), seconds * 1e6, seconds * 100);
    }
  }
};

void run_samples(benchmark::State& state, telemetry::GpuSampler& sampler) {
  int64_t now = kStartMs;
  for (auto _ : state) {
    auto samples = sampler.sample(util::from_millis(now));
    benchmark::DoNotOptimize(samples);
    now += 1000;
  }
}

void synthetic_8_gpus(benchmark::State& state) {
  auto sampler = telemetry::make_synthetic_sampler("sim:8xH100-80GB");
  if (!sampler.is_ok()) {
    state.SkipWithError(sampler.status().to_string().c_str());
    return;
  }
  const char* profiles[] = {"healthy",     "data-bound", "memory-leak", "overheating",
                            "underfilled", "idle",       "healthy"};
  for (int gpu = 0; gpu < 7; ++gpu) {  // the eighth GPU runs nothing
    (*sampler)->set_synthetic_load(fmt::format("GPU-sim-{}-H100-80GB", gpu),
                                   telemetry::SyntheticLoad{.job_id = fmt::format("job-{}", gpu),
                                                            .profile = profiles[gpu],
                                                            .start = util::from_millis(kStartMs),
                                                            .pids = {1000 + gpu, 2000 + gpu}});
  }
  run_samples(state, **sampler);
}

void fake_nvml_3_gpus(benchmark::State& state) {
  auto sampler = telemetry::make_nvml_sampler_for_test(g_fake_nvml);
  if (!sampler.is_ok()) {
    state.SkipWithError(sampler.status().to_string().c_str());
    return;
  }
  run_samples(state, **sampler);
}

void driver_nvml(benchmark::State& state) {
  auto sampler = telemetry::make_nvml_sampler();
  if (!sampler.is_ok()) {
    state.SkipWithError(sampler.status().to_string().c_str());
    return;
  }
  auto devices = (*sampler)->devices();
  state.counters["gpus"] = devices.is_ok() ? static_cast<double>(devices->size()) : 0.0;
  run_samples(state, **sampler);
}

void register_all() {
  benchmark::RegisterBenchmark("sample/synthetic/8_gpus", synthetic_8_gpus)
      ->Unit(benchmark::kMicrosecond);
  if (!g_fake_nvml.empty() && std::filesystem::exists(g_fake_nvml)) {
    benchmark::RegisterBenchmark("sample/nvml_fake/3_gpus_2_mig", fake_nvml_3_gpus)
        ->Unit(benchmark::kMicrosecond);
  } else {
    fmt::print(stderr,
               "fake NVML not found ('{}'): skipping the NVML benchmark "
               "(build ty_fake_nvml or pass --fake_nvml=PATH)\n",
               g_fake_nvml);
  }
  if (g_real_nvml) {
    benchmark::RegisterBenchmark("sample/nvml/driver", driver_nvml)->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace trainyard::bench

int main(int argc, char** argv) {
  // --fake_nvml=PATH and --nvml are ours; everything else goes to Google Benchmark.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    constexpr const char* kFlag = "--fake_nvml=";
    if (std::strncmp(argv[i], kFlag, std::strlen(kFlag)) == 0) {
      trainyard::bench::g_fake_nvml = argv[i] + std::strlen(kFlag);
    } else if (std::strcmp(argv[i], "--nvml") == 0) {
      trainyard::bench::g_real_nvml = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  trainyard::bench::register_all();
  trainyard::bench::CpuShareReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
