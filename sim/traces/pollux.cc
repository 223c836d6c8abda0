// Pollux (OSDI'21) and Sia (SOSP'23) workloads: name, time, application, num_replicas,
// batch_size. They carry no durations, so a job's duration is its time to target measured by
// the Pollux job profiles at its replica count and batch size (table below; derivation in
// docs/trace-formats.md). Other configurations (the Sia Helios traces use many) take the
// step-time model fitted to the same profiles (scripts/fit-job-profiles), whose error the
// loader reports. Jobs are elastic gangs of one-GPU workers that carry their speed model
// (model/scaling.h), so a policy may resize them and the simulator runs them at the speed of
// the GPUs, count, placement and batch they get.
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sim/traces/common.h"
#include "sim/workload.h"
#include "util/csv_reader.h"
#include "util/read_file.h"

namespace trainyard::sim {
namespace {

// Time to target = iterations x seconds per iteration. Iterations: as the Pollux artifact's
// simulator counts them (every epoch of the validation curves at the progress per iteration
// its gradient statistics give; scripts/fit-job-profiles). Seconds per iteration: step_time at
// the local batch (batch / replicas, linear between profiled local batches) on the most packed
// placement of 4-GPU T4 nodes (placements.csv up to 16 GPUs, scalability.csv beyond); local
// batches above the profiled maximum (yolov3: above 8, the artifact's cap) accumulate
// gradients (compute repeated, one sync), and so does one replica above the initial batch (the
// artifact runs it in at least two steps).
struct ProfiledRun {
  std::string_view application;
  int replicas;
  int batch;
  int iterations;
  double seconds_per_iteration;
};

// Every configuration in the bundled Pollux (workloads*/) and Sia (philly/) files.
constexpr std::array<ProfiledRun, 19> kProfiledRuns{{
    {"bert", 6, 384, 476, 6.2774},           // placement 24, local batch 64 in 6 steps
    {"bert", 8, 384, 476, 5.1673},           // 44, local batch 48 in 4 steps
    {"bert", 12, 384, 476, 3.2551},          // 444, local batch 32 in 3 steps
    {"bert", 16, 384, 476, 2.7810},          // 4444, local batch 24 in 2 steps
    {"cifar10", 6, 2048, 3343, 0.2685},      // 24, local batch 341
    {"cifar10", 8, 2048, 3343, 0.2599},      // 44, local batch 256
    {"cifar10", 12, 4096, 2143, 0.2846},     // 444, local batch 341
    {"cifar10", 16, 4096, 2143, 0.2235},     // 4444, local batch 256
    {"deepspeech2", 6, 320, 2275, 1.8181},   // 24, local batch 53
    {"deepspeech2", 8, 320, 2275, 1.5463},   // 44, local batch 40
    {"deepspeech2", 12, 640, 1391, 1.7864},  // 444, local batch 53
    {"imagenet", 10, 1600, 78669, 0.7913},   // 244, local batch 160
    {"imagenet", 12, 3200, 42850, 1.3587},   // 444, local batch 267 in 2 steps
    {"imagenet", 14, 3200, 42850, 1.1863},   // 2444, local batch 229 in 2 steps
    {"imagenet", 24, 3200, 42850, 0.7427},   // 6 nodes x 4, local batch 133
    {"imagenet", 32, 6400, 25094, 1.0933},   // 8 nodes x 4, local batch 200
    {"imagenet", 48, 6400, 25094, 0.7857},   // 12 nodes x 4, local batch 133
    {"ncf", 1, 32768, 1552, 0.0296},         // 1, local batch 16384 in 2 steps (one replica)
    {"yolov3", 4, 64, 15970, 0.8829},        // 4, local batch 16 in 2 steps of 8
}};

// The profiles' testbed: T4s (320 GB/s), 4 per node.
constexpr int kProfiledGpusPerNode = 4;
constexpr double kProfiledGpuBandwidth = 320.0;

// Elastic range given to every job (all Pollux jobs are adaptive): from one GPU up to twice
// the replicas it asked for, at least 4.
constexpr int64_t kMinElasticMax = 4;

// Pollux's throughput model with gamma = 1, fitted per application to every profiled
// placement: seconds per iteration = a + b m (compute at local batch m) + [replicas > 1] (c +
// d (replicas - 2)) + [nodes > 1] (e + f (replicas - 2)); iterations to the target per global
// batch from the validation curves.
struct FittedProfile {
  std::string_view application;
  std::array<double, 6> coef;
  double max_local_batch;  // larger local batches accumulate gradients over several steps
  double median_error;     // |model - measured| / measured over the profile rows
  double p90_error;
  std::vector<std::pair<int, int>> iterations;  // (global batch, iterations), ascending
  double min_local_batch;
  std::vector<double> stat_batches;  // global batches of the validation curves, ascending
  struct Epoch {
    double progress_end;
    std::vector<double> stats;  // grad_sqr, grad_var per stat batch
  };
  std::vector<Epoch> epochs;
};

const std::vector<FittedProfile>& fitted_profiles() {
  static const std::vector<FittedProfile> profiles = {
#include "sim/traces/job_profile_model.inc"
  };
  return profiles;
}

// The job's speed model: the fitted profile of its application, at its requested replicas
// and batch, packed on 4-GPU T4 nodes as the profiles were measured; `work` is its run time
// there (0 while it is being computed).
std::shared_ptr<const model::ScalingModel> scaling_model(const FittedProfile& p, int64_t replicas,
                                                         int64_t batch, util::Duration work) {
  auto m = std::make_shared<model::ScalingModel>();
  m->application = std::string(p.application);
  m->coef = p.coef;
  m->max_local_batch = p.max_local_batch;
  m->iterations = p.iterations;
  m->replicas = static_cast<int>(replicas);
  m->batch = static_cast<int>(batch);
  m->gpus_per_node = kProfiledGpusPerNode;
  m->reference_bandwidth_gbps = kProfiledGpuBandwidth;
  m->min_local_batch = p.min_local_batch;
  m->stat_batches = p.stat_batches;
  m->epochs.reserve(p.epochs.size());
  for (const FittedProfile::Epoch& e : p.epochs) {
    model::EpochStats es;
    es.progress_end = e.progress_end;
    for (size_t i = 0; i + 1 < e.stats.size(); i += 2)
      es.grad.emplace_back(e.stats[i], e.stats[i + 1]);
    m->epochs.push_back(std::move(es));
  }
  m->work_seconds = util::to_seconds(work);
  m->prepare();
  return m;
}

struct Columns {
  int name = 0, time = 0, application = 0, replicas = 0, batch = 0;
};

// The profiled time to target, or the fitted model's for configurations never profiled
// (counted per application in `modelled`).
util::Result<util::Duration> profiled_duration(const util::CsvReader& csv, const Columns& c,
                                               int64_t replicas, int64_t batch,
                                               std::map<std::string, int64_t>* modelled) {
  const std::string_view app = csv.field(c.application);
  for (const ProfiledRun& run : kProfiledRuns) {
    if (run.application == app && run.replicas == replicas && run.batch == batch) {
      return util::seconds_f(run.iterations * run.seconds_per_iteration);
    }
  }
  for (const FittedProfile& p : fitted_profiles()) {
    if (p.application != app) continue;
    ++(*modelled)[std::string(app)];
    const int64_t nodes = (replicas + kProfiledGpusPerNode - 1) / kProfiledGpusPerNode;
    return util::seconds_f(scaling_model(p, replicas, batch, util::Duration(0))
                               ->time_to_target(static_cast<int>(replicas), static_cast<int>(nodes),
                                                static_cast<double>(batch), 1.0));
  }
  return csv.error_at(c.application,
                      fmt::format("no job profile for application '{}'; expected one of bert, "
                                  "cifar10, deepspeech2, imagenet, ncf, yolov3",
                                  app));
}

util::Result<Workload> load_profiled_workload(std::string text, const std::string& name,
                                              const TraceOptions& opts) {
  util::CsvReader csv = util::CsvReader::from_string(std::move(text), name);
  TY_RETURN_IF_ERROR(csv.read_header());
  Columns c;
  TY_ASSIGN_OR_RETURN(c.name, csv.column("name"));
  TY_ASSIGN_OR_RETURN(c.time, csv.column("time"));
  TY_ASSIGN_OR_RETURN(c.application, csv.column("application"));
  TY_ASSIGN_OR_RETURN(c.replicas, csv.column("num_replicas"));
  TY_ASSIGN_OR_RETURN(c.batch, csv.column("batch_size"));
  Workload w;
  w.source = name;
  std::map<std::string, int64_t> modelled;
  TY_RETURN_IF_ERROR(for_each_row(csv, w, opts, [&]() -> util::Status {
    TY_ASSIGN_OR_RETURN(const double submit, get_time_seconds(csv, c.time));
    TY_ASSIGN_OR_RETURN(const int64_t replicas, get_int_in(csv, c.replicas, 1, 4096, "GPUs"));
    TY_ASSIGN_OR_RETURN(const int64_t batch, get_int_in(csv, c.batch, 1, 1'000'000'000, "samples"));
    TraceJob j;
    TY_ASSIGN_OR_RETURN(j.duration, profiled_duration(csv, c, replicas, batch, &modelled));
    j.name = std::string(csv.field(c.name));
    j.submit = util::from_seconds(submit);
    j.spec.team = std::string(kDefaultTeam);
    // One worker per GPU (one data-parallel process each), elastic.
    j.spec.workers = static_cast<int>(replicas);
    j.spec.worker.gpus = 1;
    j.spec.min_workers = 1;
    j.spec.max_workers = static_cast<int>(std::max(kMinElasticMax, 2 * replicas));
    for (const FittedProfile& p : fitted_profiles()) {
      if (p.application == csv.field(c.application))
        j.scaling = scaling_model(p, replicas, batch, j.duration);
    }
    w.jobs.push_back(std::move(j));
    return util::Status::ok();
  }));
  for (const auto& [app, jobs] : modelled) {
    for (const FittedProfile& p : fitted_profiles()) {
      if (p.application != app) continue;
      w.notes.push_back(fmt::format(
          "{} {} jobs run a (replicas, batch) never profiled: their durations come from the "
          "step-time model fitted to the profiles (scripts/fit-job-profiles; step-time error "
          "{:.0f}% median, {:.0f}% at the 90th percentile)",
          jobs, app, 100 * p.median_error, 100 * p.p90_error));
    }
  }
  return w;
}

}  // namespace

util::Result<Workload> load_pollux(const std::string& path, const TraceOptions& opts) {
  TY_ASSIGN_OR_RETURN(std::string text, util::read_file(path));
  return load_pollux_from_text(std::move(text), path, opts);
}

util::Result<Workload> load_pollux_from_text(std::string text, const std::string& name,
                                             const TraceOptions& opts) {
  return load_profiled_workload(std::move(text), name, opts);
}

util::Result<Workload> load_sia(const std::string& path, const TraceOptions& opts) {
  TY_ASSIGN_OR_RETURN(std::string text, util::read_file(path));
  return load_sia_from_text(std::move(text), path, opts);
}

// Sia replays Pollux's format and profiles (its philly/ files are Pollux's minus ncf).
util::Result<Workload> load_sia_from_text(std::string text, const std::string& name,
                                          const TraceOptions& opts) {
  return load_profiled_workload(std::move(text), name, opts);
}

}  // namespace trainyard::sim
