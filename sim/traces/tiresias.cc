// Tiresias (NSDI'19) simulator jobs: job_id, num_gpu, submit_time, iterations, model_name,
// duration, interval. The trace has one user, so every job is in team "default"; jobs are named
// "<model_name>-<job_id>". More than 8 GPUs become gangs as in Philly (8-GPU servers).
#include <fmt/format.h>

#include "sim/traces/common.h"
#include "sim/workload.h"
#include "util/csv_reader.h"
#include "util/read_file.h"

namespace trainyard::sim {
namespace {

// The bundled cluster_spec.csv (the simulated testbed) has 4 GPUs per node.
constexpr int kTiresiasGpusPerServer = 4;

}  // namespace

util::Result<Workload> load_tiresias(const std::string& path, const TraceOptions& opts) {
  TY_ASSIGN_OR_RETURN(std::string text, util::read_file(path));
  return load_tiresias_from_text(std::move(text), path, opts);
}

util::Result<Workload> load_tiresias_from_text(std::string text, const std::string& name,
                                               const TraceOptions& opts) {
  util::CsvReader csv = util::CsvReader::from_string(std::move(text), name);
  TY_RETURN_IF_ERROR(csv.read_header());
  TY_ASSIGN_OR_RETURN(const int c_id, csv.column("job_id"));
  TY_ASSIGN_OR_RETURN(const int c_gpus, csv.column("num_gpu"));
  TY_ASSIGN_OR_RETURN(const int c_submit, csv.column("submit_time"));
  TY_ASSIGN_OR_RETURN(const int c_model, csv.column("model_name"));
  TY_ASSIGN_OR_RETURN(const int c_duration, csv.column("duration"));
  Workload w;
  w.source = name;
  TY_RETURN_IF_ERROR(for_each_row(csv, w, opts, [&]() -> util::Status {
    const std::string_view id = csv.field(c_id);
    if (id.empty()) return csv.error_at(c_id, "the job id is empty");
    TY_ASSIGN_OR_RETURN(const int64_t gpus, get_int_in(csv, c_gpus, 1, 4096, "GPUs"));
    TY_ASSIGN_OR_RETURN(const double submit, get_time_seconds(csv, c_submit));
    TY_ASSIGN_OR_RETURN(const double duration, get_duration_seconds(csv, c_duration));
    const std::string_view model_name = csv.field(c_model);
    TraceJob j;
    j.name = model_name.empty() ? std::string(id) : fmt::format("{}-{}", model_name, id);
    j.submit = util::from_seconds(submit);
    j.duration = util::seconds_f(duration);
    j.spec.team = std::string(kDefaultTeam);
    split_into_workers(gpus, worker_gpu_limit(kTiresiasGpusPerServer, opts), j.spec);
    w.jobs.push_back(std::move(j));
    return util::Status::ok();
  }));
  return w;
}

}  // namespace trainyard::sim
