// A workload: the jobs a simulation replays, from a trace file or the synthetic generator.
// Each job has its request (JobSpec), submit time and the run time it needs on its GPUs when
// never interrupted (the oracle duration). Trace adapters fill what their trace has; finalize()
// then sorts, numbers, and fills what the trace lacks (runtime limits, priority classes,
// checkpoint intervals) by documented, seeded rules.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/job.h"
#include "model/node.h"
#include "model/scaling.h"
#include "util/clock.h"
#include "util/ids.h"
#include "util/status.h"

namespace trainyard::sim {

struct TraceJob {
  util::JobId id;
  std::string name;
  model::JobSpec spec;
  util::Time submit{};
  util::Duration duration{0};
  bool has_priority = false;       // the trace gave a priority class
  bool has_runtime_limit = false;  // the trace gave a runtime limit
  // How the job's speed depends on its GPUs (Pollux and Sia traces); `duration` is its time at
  // the requested configuration. nullptr: the same speed on any placement.
  std::shared_ptr<const model::ScalingModel> scaling;
};

struct Workload {
  std::string source;
  std::vector<TraceJob> jobs;
  std::vector<std::string> teams;  // in order of first appearance
  int64_t skipped_rows = 0;
  // Well-formed rows an adapter reads but does not replay, by reason ("job steps": 12), e.g.
  // sacct's jobs that never started. Reported beside skipped_rows; not errors.
  std::map<std::string, int64_t> not_replayed;
  // What a user should know about how the trace was read (e.g. durations from a fitted model).
  std::vector<std::string> notes;
};

// How runtime limits are derived when a trace has none (backfill uses them).
enum class RuntimeLimitMode {
  Exact,    // limit = the job's real duration (perfect user estimates)
  Rounded,  // the next of 15m, 30m, 1h, 2h, 4h, 8h, 12h, 1d, 2d, 3d, 7d, 14d, 30d, 60d, 90d
  None,     // no limits (backfill can reserve nothing)
};

struct TraceOptions {
  bool skip_bad_rows = false;
  RuntimeLimitMode runtime_limit = RuntimeLimitMode::Rounded;
  uint64_t seed = 1;
  // Share of jobs given the high and normal priority classes when the trace has none; the rest
  // are low. Drawn per job from `seed`.
  double high_priority_share = 0.1;
  double normal_priority_share = 0.3;
  util::Duration checkpoint_interval = util::seconds(1800);  // when the trace has none
  int64_t max_jobs = 0;                                      // 0 = all
  // When > 0, the GPU count of the cluster's smallest GPU node: gangs of the Philly, Tiresias,
  // Pollux and Sia traces are cut into workers of at most this many GPUs (instead of the
  // trace's own server size alone), so that they fit the replayed cluster's nodes.
  int gpus_per_node = 0;
  // sacct: GRES type -> accelerator name, beside model/slurm_gres.h's built-in mapping (the
  // same overrides the slurm.conf reader gets, so jobs and nodes name the same models).
  std::map<std::string, std::string> gres_types;
};

// Every trace format trainyard reads, by name: philly, alibaba, tiresias, sia, pollux, csv,
// sacct.
std::vector<std::string> trace_formats();
// Loads `path` in `format` ("auto" guesses from the header row), then finalize()s it.
util::Result<Workload> load_trace(const std::string& format, const std::string& path,
                                  const TraceOptions& opts);
// The same for a trace held in memory; `name` stands for the file in error messages.
util::Result<Workload> load_trace_from_text(const std::string& format, std::string text,
                                            const std::string& name, const TraceOptions& opts);

// Sorts jobs by (submit, trace order), numbers them 1..n, shifts submit times so the first is
// at 0, and fills runtime limits, priorities and checkpoint intervals the trace lacked.
void finalize(Workload& w, const TraceOptions& opts);

util::Result<Workload> load_philly(const std::string& path, const TraceOptions& opts);

// Adapters, one per format (docs/trace-formats.md). They return the rows in trace order, not
// yet finalize()d. Each file form reads `path` and calls its text form, whose `name` stands for
// the file in "name:line:column: column 'x': ..." errors.
util::Result<Workload> load_philly_from_text(std::string text, const std::string& name,
                                             const TraceOptions& opts);
// Alibaba openb pods (cluster-trace-gpu-v2023 openb_pod_list_*.csv); qos is the team.
util::Result<Workload> load_alibaba(const std::string& path, const TraceOptions& opts);
util::Result<Workload> load_alibaba_from_text(std::string text, const std::string& name,
                                              const TraceOptions& opts);
// Alibaba openb nodes (openb_node_list_*.csv), numbered 1..n in file order. Stops at the first
// bad row: a cluster with a missing node would silently differ from the trace's.
util::Result<std::vector<model::Node>> load_alibaba_nodes(const std::string& path);
util::Result<std::vector<model::Node>> load_alibaba_nodes_from_text(std::string text,
                                                                    const std::string& name);
// Tiresias (NSDI'19) simulator jobs: job_id, num_gpu, submit_time, ..., model_name, duration.
util::Result<Workload> load_tiresias(const std::string& path, const TraceOptions& opts);
util::Result<Workload> load_tiresias_from_text(std::string text, const std::string& name,
                                               const TraceOptions& opts);
// Pollux (OSDI'21) and Sia (SOSP'23) workloads: name, time, application, num_replicas,
// batch_size. Durations come from the Pollux job profiles (see docs/trace-formats.md).
util::Result<Workload> load_pollux(const std::string& path, const TraceOptions& opts);
util::Result<Workload> load_pollux_from_text(std::string text, const std::string& name,
                                             const TraceOptions& opts);
util::Result<Workload> load_sia(const std::string& path, const TraceOptions& opts);
util::Result<Workload> load_sia_from_text(std::string text, const std::string& name,
                                          const TraceOptions& opts);
// Slurm accounting records: `sacct --parsable2 --allocations -o JobID,User,Account,Partition,
// Submit,Start,End,State,AllocTRES,ReqTRES,Timelimit,NNodes` (with its header row). Jobs that
// never started, still run, or used no GPU are counted in Workload::not_replayed.
util::Result<Workload> load_sacct(const std::string& path, const TraceOptions& opts);
util::Result<Workload> load_sacct_from_text(std::string text, const std::string& name,
                                            const TraceOptions& opts);
// trainyard's generic CSV: submit_time, duration, gpus and optional columns. Jobs come back
// sorted by submit time (stable) with ids 1..n and depends_on resolved to those ids, which is
// the numbering finalize() keeps.
util::Result<Workload> load_csv_trace(const std::string& path, const TraceOptions& opts);
util::Result<Workload> load_csv_trace_from_text(std::string text, const std::string& name,
                                                const TraceOptions& opts);
// Writes `w` in the generic CSV format with every column, so any workload (a synthetic one,
// a converted trace) can be saved and loaded back with load_csv_trace.
std::string format_csv_trace(const Workload& w);

// Adds a row's error to the workload or returns it, per opts.skip_bad_rows.
util::Status handle_bad_row(Workload& w, const TraceOptions& opts, util::Status error);

}  // namespace trainyard::sim
