// Simulator throughput: replays the full Philly trace (82,247 jobs) on the demo cluster under
// each policy and prints a table of wall time, events/s and scheduler calls/s, side by side with
// a baseline run in the same process that does not keep the arrival-order hint (so plan() sorts
// the whole queue on every call). Median of --repeat runs per cell.
//   sim_throughput [--trace PATH] [--cluster PATH] [--policy a,b] [--repeat N] [--max-jobs N]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "model/cluster_config.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace {

using namespace trainyard;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string trace = "../shared/traces/philly-pollux/philly.csv";
  std::string cluster_path = "examples/clusters/philly-v100.yaml";
  std::string policies = "fifo,backfill,srtf,tiresias,fair,priority";
  int repeat = 3;
  int64_t max_jobs = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--trace"))
      trace = argv[i + 1];
    else if (!std::strcmp(argv[i], "--cluster"))
      cluster_path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--policy"))
      policies = argv[i + 1];
    else if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--max-jobs"))
      max_jobs = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  sim::TraceOptions topts;
  topts.max_jobs = max_jobs;
  auto workload = sim::load_trace("auto", trace, topts);
  auto cluster = sim::load_cluster_yaml(cluster_path);
  if (!workload.is_ok() || !cluster.is_ok()) {
    std::fprintf(stderr, "%s\n",
                 (!workload.is_ok() ? workload.status() : cluster.status()).message().c_str());
    return 2;
  }
  std::printf("%zu jobs, %lld GPUs, median of %d runs\n\n", workload->jobs.size(),
              static_cast<long long>(cluster->total_gpus()), repeat);
  std::printf("%-9s %9s %9s %10s %12s %12s %10s\n", "policy", "events", "plans", "wall s",
              "events/s", "baseline s", "speed-up");
  std::string list = policies + ",";
  for (size_t pos = 0, next; (next = list.find(',', pos)) != std::string::npos; pos = next + 1) {
    const std::string name = list.substr(pos, next - pos);
    if (name.empty()) continue;
    std::vector<double> fast, slow;
    int64_t events = 0, plans = 0;
    for (int r = 0; r < repeat; ++r) {
      for (bool hint : {true, false}) {
        sim::SimOptions o;
        o.policy.name = name;
        o.keep_arrival_order = hint;
        auto res = sim::simulate(*workload, *cluster, o);
        if (!res.is_ok()) {
          std::fprintf(stderr, "%s\n", res.status().message().c_str());
          return 1;
        }
        (hint ? fast : slow).push_back(res->wall_seconds);
        events = res->events;
        plans = res->plan_calls;
      }
    }
    const double f = median(fast), s = median(slow);
    std::printf("%-9s %9lld %9lld %10.2f %12.0f %12.2f %9.2fx\n", name.c_str(),
                static_cast<long long>(events), static_cast<long long>(plans), f,
                static_cast<double>(events) / f, s, s / f);
    std::fflush(stdout);
  }
  return 0;
}
