// Alibaba cluster-trace-gpu-v2023 ("openb", ATC'23) pods: one pod is one single-worker job.
// Submit = creation_time; run time = deletion_time - scheduled_time, or deletion_time -
// creation_time for pods the original cluster never scheduled (the time their demand stood).
// A difference of 0 is read as 1 s, the trace's resolution; a negative one is a bad row.
// Running pods end at the trace's end (censored). qos (LS/BE/Burstable/Guaranteed) is the team.
#include <fmt/format.h>

#include "model/accelerator.h"
#include "sim/traces/common.h"
#include "sim/workload.h"
#include "util/csv_reader.h"
#include "util/read_file.h"

namespace trainyard::sim {
namespace {

// Memory and CPU bounds keep mib()/milli arithmetic exact; the largest openb node has 128
// cores and 1 TiB.
constexpr int64_t kMaxCpuMilli = 1'000'000'000;
constexpr int64_t kMaxMemoryMib = 1'000'000'000;

struct PodColumns {
  int name = -1;  // optional
  int cpu = 0, memory = 0, num_gpu = 0, gpu_milli = 0, gpu_spec = 0, qos = 0;
  int creation = 0, deletion = 0, scheduled = 0;
};

util::Result<PodColumns> pod_columns(const util::CsvReader& csv) {
  PodColumns c;
  if (csv.has_column("name")) c.name = *csv.column("name");
  TY_ASSIGN_OR_RETURN(c.cpu, csv.column("cpu_milli"));
  TY_ASSIGN_OR_RETURN(c.memory, csv.column("memory_mib"));
  TY_ASSIGN_OR_RETURN(c.num_gpu, csv.column("num_gpu"));
  TY_ASSIGN_OR_RETURN(c.gpu_milli, csv.column("gpu_milli"));
  TY_ASSIGN_OR_RETURN(c.gpu_spec, csv.column("gpu_spec"));
  TY_ASSIGN_OR_RETURN(c.qos, csv.column("qos"));
  TY_ASSIGN_OR_RETURN(c.creation, csv.column("creation_time"));
  TY_ASSIGN_OR_RETURN(c.deletion, csv.column("deletion_time"));
  TY_ASSIGN_OR_RETURN(c.scheduled, csv.column("scheduled_time"));
  return c;
}

// num_gpu 0: CPU-only; num_gpu 1 with gpu_milli < 1000: a share of one GPU; gpu_milli 1000:
// num_gpu whole GPUs. A share spread over several GPUs has no JobSpec form and is refused.
util::Status set_gpu_request(const util::CsvReader& csv, const PodColumns& c,
                             model::WorkerRequest& worker) {
  TY_ASSIGN_OR_RETURN(const int64_t num_gpu,
                      get_int_in(csv, c.num_gpu, 0, model::kMaxGpusPerNode, "GPUs"));
  TY_ASSIGN_OR_RETURN(const int64_t milli,
                      get_int_in(csv, c.gpu_milli, 0, model::kMilliPerGpu, "milli-GPUs"));
  if (num_gpu == 0) {
    if (milli != 0) {
      return csv.error_at(c.gpu_milli, fmt::format("a pod without GPUs (num_gpu 0) must have "
                                                   "gpu_milli 0, got {}",
                                                   milli));
    }
    return util::Status::ok();
  }
  if (milli == 0) {
    return csv.error_at(c.gpu_milli, "a pod with GPUs needs gpu_milli 1..1000 (1000 = whole GPUs)");
  }
  if (milli == model::kMilliPerGpu) {
    worker.gpus = static_cast<int>(num_gpu);
  } else if (num_gpu == 1) {
    worker.gpu_milli = model::GpuMilli(milli);
  } else {
    return csv.error_at(c.gpu_milli,
                        fmt::format("a share of a GPU ({} milli) is only possible with num_gpu 1, "
                                    "got num_gpu {}; use gpu_milli 1000 for whole GPUs",
                                    milli, num_gpu));
  }
  return util::Status::ok();
}

util::Result<util::Duration> pod_run_time(const util::CsvReader& csv, const PodColumns& c) {
  TY_ASSIGN_OR_RETURN(const double created, get_time_seconds(csv, c.creation));
  TY_ASSIGN_OR_RETURN(const double deleted, get_time_seconds(csv, c.deletion));
  double start = created;
  std::string_view start_name = "creation_time";
  if (!csv.field(c.scheduled).empty()) {
    TY_ASSIGN_OR_RETURN(start, get_time_seconds(csv, c.scheduled));
    start_name = "scheduled_time";
    if (start < created) {
      return csv.error_at(c.scheduled, fmt::format("the pod was scheduled ({}) before it was "
                                                   "created ({}); expected scheduled_time >= "
                                                   "creation_time",
                                                   start, created));
    }
  }
  const double run = deleted - start;
  if (run < 0) {
    return csv.error_at(c.deletion, fmt::format("the pod ends ({}) before its {} ({}); expected "
                                                "deletion_time >= {}",
                                                deleted, start_name, start, start_name));
  }
  if (run > kMaxTraceDurationSeconds) {
    return csv.error_at(c.deletion,
                        fmt::format("the pod runs {} s ({} - {}); expected at most "
                                    "{:g} s",
                                    run, deleted, start_name, kMaxTraceDurationSeconds));
  }
  return util::seconds_f(run > 0 ? run : 1.0);
}

util::Status parse_pod(const util::CsvReader& csv, const PodColumns& c, Workload& w) {
  TraceJob j;
  if (c.name >= 0) j.name = std::string(csv.field(c.name));
  TY_ASSIGN_OR_RETURN(const int64_t cpu, get_int_in(csv, c.cpu, 0, kMaxCpuMilli, "milli-cores"));
  TY_ASSIGN_OR_RETURN(const int64_t mem, get_int_in(csv, c.memory, 0, kMaxMemoryMib, "MiB"));
  j.spec.worker.cpu = model::CpuMilli(cpu);
  j.spec.worker.memory = model::mib(mem);
  TY_RETURN_IF_ERROR(set_gpu_request(csv, c, j.spec.worker));
  TY_ASSIGN_OR_RETURN(const std::vector<std::string> models, split_list(csv, c.gpu_spec));
  for (const auto& m : models)
    j.spec.allowed_gpu_models.push_back(model::canonical_accelerator_name(m));
  j.spec.team = std::string(csv.field(c.qos));
  if (j.spec.team.empty()) return csv.error_at(c.qos, "the qos class (the team) is empty");
  TY_ASSIGN_OR_RETURN(const double created, get_time_seconds(csv, c.creation));
  j.submit = util::from_seconds(created);
  TY_ASSIGN_OR_RETURN(j.duration, pod_run_time(csv, c));
  w.jobs.push_back(std::move(j));
  return util::Status::ok();
}

}  // namespace

util::Result<Workload> load_alibaba(const std::string& path, const TraceOptions& opts) {
  TY_ASSIGN_OR_RETURN(std::string text, util::read_file(path));
  return load_alibaba_from_text(std::move(text), path, opts);
}

util::Result<Workload> load_alibaba_from_text(std::string text, const std::string& name,
                                              const TraceOptions& opts) {
  util::CsvReader csv = util::CsvReader::from_string(std::move(text), name);
  TY_RETURN_IF_ERROR(csv.read_header());
  TY_ASSIGN_OR_RETURN(const PodColumns cols, pod_columns(csv));
  Workload w;
  w.source = name;
  TY_RETURN_IF_ERROR(for_each_row(csv, w, opts, [&] { return parse_pod(csv, cols, w); }));
  return w;
}

}  // namespace trainyard::sim
