// The HTTP API's resources as plain structs (docs/api.md is the contract): the server builds its
// replies from them and the CLI reads replies back into them, so each key name is written once,
// in the to_json/from_json pair of its view (api_job_views.cc, api_cluster_views.cc).
// from_json never throws: a missing or ill-typed field is an InvalidArgument naming its path
// ("field 'items[2].placement[0].gpu' is missing (expected an integer)"). Times are the API's
// RFC 3339 text, as the server wrote it; nullopt where the API writes null.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/job.h"
#include "model/job_state.h"
#include "model/labels.h"
#include "util/status.h"

namespace trainyard::model {

// One entry of a job's `placement`: one GPU of a worker (or the worker, without GPUs).
struct PlacementView {
  int worker = 0;
  std::string node;
  int gpu = -1;  // index on the node; -1 without GPUs
  int milli = 0;
  std::optional<std::string> device;       // the UUID the worker sees; absent without a GPU
  std::optional<std::string> mig_profile;  // MIG only, with mig_start
  std::optional<int> mig_start;
  bool operator==(const PlacementView&) const = default;
};

// What a job asks for, from its spec: `workers`, `resources` (the per-worker limits, in the
// spec's form: nvidia.com/gpu or nvidia.com/mig-<profile>, cpu, memory) and `labels`.
struct JobRequestView {
  int workers = 1;
  WorkerRequest resources;
  Labels labels;
  bool operator==(const JobRequestView&) const = default;
};

struct JobArrayView {
  int64_t job_id = 0;  // the array's id: its first task's id
  int index = 0;
  int limit = 0;  // 0: no limit
  bool operator==(const JobArrayView&) const = default;
};

// estimatedStart, estimatedStartBasis, estimatedStartReason of a pending job.
struct StartEstimateView {
  std::optional<std::string> at;  // null when nothing bounds it
  std::string basis;              // reservation, replay or unknown
  std::string reason;
  bool operator==(const StartEstimateView&) const = default;
};

// A running job's step progress, from rank 0's metrics.
struct JobProgressView {
  int attempt = 0;
  int64_t step = 0;
  std::optional<int64_t> total_steps;
  std::optional<double> fraction;
  std::optional<double> steps_per_second;
  std::optional<double> samples_per_second;
  std::string reported;
  std::optional<int64_t> eta_seconds;
  std::optional<std::string> finish_estimate;
  bool operator==(const JobProgressView&) const = default;
};

// The job object: an item of GET /api/v1/jobs, and the part of the other job replies that every
// job has. Optional members are keys the API leaves out when they do not apply.
struct JobView {
  int64_t id = 0;
  std::string name;
  std::string team;
  JobState state = JobState::Pending;
  int attempt = 1;
  int priority = 0;
  int failures = 0;
  std::optional<std::string> submitted, started, finished, updated;
  std::string reason;
  double attained_gpu_seconds = 0;
  std::vector<PlacementView> placement;
  std::optional<JobRequestView> request;  // absent only when the stored spec cannot be read
  bool held = false;
  std::optional<JobArrayView> array;
  std::optional<std::string> waiting;               // pending jobs the server has in memory
  std::map<int, double> measured_steps_per_second;  // by worker count; left out when empty
  std::optional<StartEstimateView> start_estimate;
  std::optional<std::string> stopping;  // preempt, cancel, deadline or failure
  std::optional<JobProgressView> progress;
  bool operator==(const JobView&) const = default;
};

// POST /api/v1/jobs: the (first) job, plus what an array or a repeated key adds.
struct SubmitReplyView {
  JobView job;
  std::optional<int64_t> array_tasks;
  std::optional<int64_t> last_id;
  bool idempotent_replay = false;  // written only when true
  bool operator==(const SubmitReplyView&) const = default;
};

struct AttemptView {
  int attempt = 0;
  std::optional<std::string> started, ended;
  std::string outcome;  // "" while it runs
  int exit_code = 0;
  std::vector<PlacementView> placement;
  nlohmann::json processes;  // what the server re-adopts workers by; shown as stored
  bool operator==(const AttemptView&) const = default;
};

// `metrics`: the last complete line of rank 0's metrics file, as the job wrote it.
struct JobMetricsView {
  int attempt = 0;
  int64_t lines = 0;
  nlohmann::json last;
  nlohmann::json tuned;  // trainyard.tune's newest choice; null (left out) without one
  bool operator==(const JobMetricsView&) const = default;
};

struct CheckpointSummaryView {
  int64_t step = 0;
  int64_t bytes = 0;
  std::string created;
  bool operator==(const CheckpointSummaryView&) const = default;
};

// How a job used its GPUs (`utilization` of a job, `summary` of its telemetry).
struct UtilizationView {
  int64_t samples = 0;
  int64_t devices = 0;
  std::optional<std::string> from, to;
  std::optional<double> gpu_util_avg, gpu_util_p95, gpu_util_max, sm_active_avg, tensor_active_avg,
      memory_used_max_bytes, memory_total_bytes, temperature_max_c, power_avg_w;
  std::optional<int64_t> throttle_reasons, last_xid;
  bool operator==(const UtilizationView&) const = default;
};

// GET /api/v1/jobs/{id}: the job object with its spec, attempts and what the job reported.
struct JobDetailView {
  JobView job;
  nlohmann::json spec;  // the canonical stored spec (docs/job-spec.md), shown as stored
  std::vector<AttemptView> attempts;
  std::optional<JobMetricsView> metrics;
  std::optional<CheckpointSummaryView> checkpoint;
  std::optional<int64_t> steps_since_checkpoint;
  std::optional<UtilizationView> utilization;
  bool operator==(const JobDetailView&) const = default;
};

// GET /api/v1/jobs.
struct JobListView {
  std::vector<JobView> items;
  bool has_more = false;
  std::optional<int64_t> total;  // absent with labelSelector
  std::optional<std::string> next_cursor, prev_cursor;
  std::optional<int64_t> next_before;
  bool operator==(const JobListView&) const = default;
};

struct JobEventView {
  int64_t seq = 0;
  std::string time;
  std::string type;
  std::string from;  // "" for events that are not transitions
  std::string to;
  int attempt = 1;
  std::string reason;
  bool operator==(const JobEventView&) const = default;
};

// GET /api/v1/jobs/{id}/events.
struct JobEventListView {
  std::vector<JobEventView> items;
  bool operator==(const JobEventListView&) const = default;
};

// POST /api/v1/arrays/{id}/cancel.
struct ArrayCancelView {
  int64_t array_job_id = 0;
  std::vector<int64_t> cancelled;   // pending tasks, cancelled at once
  std::vector<int64_t> cancelling;  // running tasks, notice sent
  bool operator==(const ArrayCancelView&) const = default;
};

nlohmann::json to_json(const JobView& v);
nlohmann::json to_json(const SubmitReplyView& v);
nlohmann::json to_json(const JobDetailView& v);
nlohmann::json to_json(const JobListView& v);
nlohmann::json to_json(const JobEventListView& v);
nlohmann::json to_json(const ArrayCancelView& v);
nlohmann::json to_json(const UtilizationView& v);
// `resources` of the job object: the spec's per-worker limits.
nlohmann::json to_json(const WorkerRequest& v);
nlohmann::json to_json(const std::vector<PlacementView>& v);

util::Status from_json(const nlohmann::json& j, JobView& out);
util::Status from_json(const nlohmann::json& j, SubmitReplyView& out);
util::Status from_json(const nlohmann::json& j, JobDetailView& out);
util::Status from_json(const nlohmann::json& j, JobListView& out);
util::Status from_json(const nlohmann::json& j, JobEventListView& out);
util::Status from_json(const nlohmann::json& j, ArrayCancelView& out);
util::Status from_json(const nlohmann::json& j, UtilizationView& out);
util::Status from_json(const nlohmann::json& j, WorkerRequest& out);
util::Status from_json(const nlohmann::json& j, std::vector<PlacementView>& out);

// The view `j` holds, or from_json's error.
template <typename View>
util::Result<View> view_from_json(const nlohmann::json& j) {
  View v;
  TY_RETURN_IF_ERROR(from_json(j, v));
  return v;
}

}  // namespace trainyard::model
