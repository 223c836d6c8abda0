// The job resources of the API (api_views.h): the only place their key names are written.
#include <charconv>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "model/api_views.h"
#include "model/internal/api_json.h"
#include "model/quantity.h"
#include "model/worker_limits.h"

namespace trainyard::model {

using api_json::FieldReader;
using api_json::Json;
using api_json::or_null;

namespace {

constexpr const char* kGpuKey = "nvidia.com/gpu";
constexpr const char* kMigKeyPrefix = "nvidia.com/mig-";

}  // namespace

// ---- writers ---------------------------------------------------------------------------------

Json to_json(const WorkerRequest& w) {
  return worker_limits_json<Json>(w);  // the spec's own form of resources.limits
}

Json to_json(const std::vector<PlacementView>& placement) {
  Json arr = Json::array();
  for (const auto& p : placement) {
    Json e = {{"worker", p.worker}, {"node", p.node}, {"gpu", p.gpu}, {"milli", p.milli}};
    if (p.mig_profile) e["mig_profile"] = *p.mig_profile;
    if (p.mig_start) e["mig_start"] = *p.mig_start;
    if (p.device) e["device"] = *p.device;
    arr.push_back(std::move(e));
  }
  return arr;
}

namespace {

Json progress_json(const JobProgressView& p) {
  return {{"attempt", p.attempt},
          {"step", p.step},
          {"totalSteps", or_null(p.total_steps)},
          {"fraction", or_null(p.fraction)},
          {"stepsPerSecond", or_null(p.steps_per_second)},
          {"samplesPerSecond", or_null(p.samples_per_second)},
          {"reported", p.reported},
          {"etaSeconds", or_null(p.eta_seconds)},
          {"finishEstimate", or_null(p.finish_estimate)}};
}

}  // namespace

Json to_json(const JobView& v) {
  Json j = {{"id", v.id},
            {"name", v.name},
            {"team", v.team},
            {"state", job_state_name(v.state)},
            {"attempt", v.attempt},
            {"priority", v.priority},
            {"failures", v.failures},
            {"submitted", or_null(v.submitted)},
            {"started", or_null(v.started)},
            {"finished", or_null(v.finished)},
            {"updated", or_null(v.updated)},
            {"reason", v.reason},
            {"attainedGpuSeconds", v.attained_gpu_seconds},
            {"placement", to_json(v.placement)},
            {"held", v.held}};
  if (v.request) {
    j["workers"] = v.request->workers;
    j["resources"] = to_json(v.request->resources);
    Json labels = Json::object();
    for (const auto& [k, value] : v.request->labels) labels[k] = value;
    j["labels"] = std::move(labels);
  }
  if (v.array)
    j["array"] = {{"jobId", v.array->job_id}, {"index", v.array->index}, {"limit", v.array->limit}};
  if (v.waiting) j["waiting"] = *v.waiting;
  if (!v.measured_steps_per_second.empty()) {
    Json pace = Json::object();
    for (const auto& [workers, steps] : v.measured_steps_per_second)
      pace[std::to_string(workers)] = steps;
    j["measuredStepsPerSecond"] = std::move(pace);
  }
  if (v.start_estimate) {
    j["estimatedStart"] = or_null(v.start_estimate->at);
    j["estimatedStartBasis"] = v.start_estimate->basis;
    j["estimatedStartReason"] = v.start_estimate->reason;
  }
  if (v.stopping) j["stopping"] = *v.stopping;
  if (v.progress) j["progress"] = progress_json(*v.progress);
  return j;
}

Json to_json(const SubmitReplyView& v) {
  Json j = to_json(v.job);
  if (v.array_tasks) j["arrayTasks"] = *v.array_tasks;
  if (v.last_id) j["lastId"] = *v.last_id;
  if (v.idempotent_replay) j["idempotentReplay"] = true;
  return j;
}

Json to_json(const UtilizationView& v) {
  return {{"samples", v.samples},
          {"devices", v.devices},
          {"from", or_null(v.from)},
          {"to", or_null(v.to)},
          {"gpuUtilAvg", or_null(v.gpu_util_avg)},
          {"gpuUtilP95", or_null(v.gpu_util_p95)},
          {"gpuUtilMax", or_null(v.gpu_util_max)},
          {"smActiveAvg", or_null(v.sm_active_avg)},
          {"tensorActiveAvg", or_null(v.tensor_active_avg)},
          {"memoryUsedMaxBytes", or_null(v.memory_used_max_bytes)},
          {"memoryTotalBytes", or_null(v.memory_total_bytes)},
          {"temperatureMaxC", or_null(v.temperature_max_c)},
          {"powerAvgW", or_null(v.power_avg_w)},
          {"throttleReasons", or_null(v.throttle_reasons)},
          {"lastXid", or_null(v.last_xid)}};
}

Json to_json(const JobDetailView& v) {
  Json j = to_json(v.job);
  j["spec"] = v.spec;
  Json attempts = Json::array();
  for (const auto& a : v.attempts) {
    attempts.push_back({{"attempt", a.attempt},
                        {"started", or_null(a.started)},
                        {"ended", or_null(a.ended)},
                        {"outcome", a.outcome},
                        {"exitCode", a.exit_code},
                        {"placement", to_json(a.placement)},
                        {"processes", a.processes}});
  }
  j["attempts"] = std::move(attempts);
  if (v.metrics) {
    j["metrics"] = {
        {"attempt", v.metrics->attempt}, {"lines", v.metrics->lines}, {"last", v.metrics->last}};
    if (!v.metrics->tuned.is_null()) j["metrics"]["tuned"] = v.metrics->tuned;
  }
  if (v.checkpoint)
    j["checkpoint"] = {{"step", v.checkpoint->step},
                       {"bytes", v.checkpoint->bytes},
                       {"created", v.checkpoint->created}};
  if (v.steps_since_checkpoint) j["stepsSinceCheckpoint"] = *v.steps_since_checkpoint;
  if (v.utilization) j["utilization"] = to_json(*v.utilization);
  return j;
}

Json to_json(const JobListView& v) {
  Json items = Json::array();
  for (const auto& job : v.items) items.push_back(to_json(job));
  Json j = {{"items", std::move(items)}, {"hasMore", v.has_more}};
  if (v.total) j["total"] = *v.total;
  if (v.next_cursor) j["nextCursor"] = *v.next_cursor;
  if (v.prev_cursor) j["prevCursor"] = *v.prev_cursor;
  if (v.next_before) j["nextBefore"] = *v.next_before;
  return j;
}

Json to_json(const JobEventListView& v) {
  Json items = Json::array();
  for (const auto& e : v.items) {
    items.push_back({{"seq", e.seq},
                     {"time", e.time},
                     {"type", e.type},
                     {"from", e.from},
                     {"to", e.to},
                     {"attempt", e.attempt},
                     {"reason", e.reason}});
  }
  return {{"items", std::move(items)}};
}

Json to_json(const ArrayCancelView& v) {
  return {{"arrayJobId", v.array_job_id}, {"cancelled", v.cancelled}, {"cancelling", v.cancelling}};
}

// ---- readers ---------------------------------------------------------------------------------

void read_fields(FieldReader& r, PlacementView& p) {
  r.required("worker", p.worker)
      .required("node", p.node)
      .required("gpu", p.gpu)
      .required("milli", p.milli)
      .optional("device", p.device)
      .optional("mig_profile", p.mig_profile)
      .optional("mig_start", p.mig_start);
}

void read_fields(FieldReader& r, WorkerRequest& w) {
  w = WorkerRequest{};
  // Each key is optional in the spec's form; a MIG request names its profile in the key.
  for (const auto& [key, value] : r.json().items()) {
    if (!key.starts_with(kMigKeyPrefix)) continue;
    int count = 0;
    r.required(key.c_str(), count);
    w.mig_profile = key.substr(std::string_view(kMigKeyPrefix).size());
  }
  std::optional<Json> gpu;
  r.optional(kGpuKey, gpu);
  if (gpu && gpu->is_number_integer()) {
    r.required(kGpuKey, w.gpus);
  } else if (gpu) {
    double share = 0;
    r.required(kGpuKey, share);
    if (r.ok() && !(share > 0 && share < 1))
      r.fail_value(kGpuKey, "must be a whole number or a fraction below 1");
    w.gpu_milli = GpuMilli(std::llround(share * kMilliPerGpu));
  }
  std::optional<Json> cpu;
  r.optional("cpu", cpu);
  if (cpu && cpu->is_number_integer()) {
    int64_t cores = 0;
    r.required("cpu", cores);
    w.cpu = CpuMilli(cores * 1000);
  } else if (cpu) {
    std::string text;
    r.required("cpu", text);
    if (auto c = parse_cpu(text); c.is_ok()) {
      w.cpu = *c;
    } else if (r.ok()) {
      r.fail_value("cpu", "is not a CPU quantity: " + c.status().message());
    }
  }
  std::optional<std::string> memory;
  r.optional("memory", memory);
  if (memory) {
    if (auto b = parse_bytes(*memory); b.is_ok()) {
      w.memory = *b;
    } else {
      r.fail_value("memory", "is not a byte quantity: " + b.status().message());
    }
  }
}

void read_fields(FieldReader& r, JobProgressView& p) {
  r.required("attempt", p.attempt)
      .required("step", p.step)
      .nullable("totalSteps", p.total_steps)
      .nullable("fraction", p.fraction)
      .nullable("stepsPerSecond", p.steps_per_second)
      .nullable("samplesPerSecond", p.samples_per_second)
      .required("reported", p.reported)
      .nullable("etaSeconds", p.eta_seconds)
      .nullable("finishEstimate", p.finish_estimate);
}

void read_fields(FieldReader& r, JobArrayView& a) {
  r.required("jobId", a.job_id).required("index", a.index).required("limit", a.limit);
}

void read_fields(FieldReader& r, JobView& v) {
  r.required("id", v.id).required("name", v.name).required("team", v.team);
  std::string state;
  r.required("state", state);
  if (r.ok()) {
    if (auto s = parse_job_state(state); s.is_ok()) {
      v.state = *s;
    } else {
      r.fail_value("state", fmt::format("is '{}', not a job state", state));
    }
  }
  r.required("attempt", v.attempt)
      .required("priority", v.priority)
      .required("failures", v.failures)
      .nullable("submitted", v.submitted)
      .nullable("started", v.started)
      .nullable("finished", v.finished)
      .nullable("updated", v.updated)
      .required("reason", v.reason)
      .required("attainedGpuSeconds", v.attained_gpu_seconds)
      .required("placement", v.placement)
      .required("held", v.held);
  v.request.reset();
  if (r.has("workers")) {
    JobRequestView& q = v.request.emplace();
    r.required("workers", q.workers)
        .required("resources", q.resources)
        .required("labels", q.labels);
  }
  r.optional("array", v.array).optional("waiting", v.waiting);
  std::optional<std::map<std::string, double>> pace;
  r.optional("measuredStepsPerSecond", pace);
  v.measured_steps_per_second.clear();
  for (const auto& [workers, steps] : pace.value_or(std::map<std::string, double>{})) {
    int n = 0;
    const auto [end, ec] = std::from_chars(workers.data(), workers.data() + workers.size(), n);
    if (ec != std::errc() || end != workers.data() + workers.size()) {
      r.fail_value("measuredStepsPerSecond",
                   fmt::format("has the key '{}', not a worker count", workers));
      break;
    }
    v.measured_steps_per_second[n] = steps;
  }
  v.start_estimate.reset();
  if (r.has("estimatedStartBasis")) {
    StartEstimateView& e = v.start_estimate.emplace();
    r.nullable("estimatedStart", e.at)
        .required("estimatedStartBasis", e.basis)
        .required("estimatedStartReason", e.reason);
  }
  r.optional("stopping", v.stopping).optional("progress", v.progress);
}

void read_fields(FieldReader& r, SubmitReplyView& v) {
  read_fields(r, v.job);
  std::optional<bool> replay;
  r.optional("arrayTasks", v.array_tasks)
      .optional("lastId", v.last_id)
      .optional("idempotentReplay", replay);
  v.idempotent_replay = replay.value_or(false);
}

void read_fields(FieldReader& r, UtilizationView& v) {
  r.required("samples", v.samples)
      .required("devices", v.devices)
      .nullable("from", v.from)
      .nullable("to", v.to)
      .nullable("gpuUtilAvg", v.gpu_util_avg)
      .nullable("gpuUtilP95", v.gpu_util_p95)
      .nullable("gpuUtilMax", v.gpu_util_max)
      .nullable("smActiveAvg", v.sm_active_avg)
      .nullable("tensorActiveAvg", v.tensor_active_avg)
      .nullable("memoryUsedMaxBytes", v.memory_used_max_bytes)
      .nullable("memoryTotalBytes", v.memory_total_bytes)
      .nullable("temperatureMaxC", v.temperature_max_c)
      .nullable("powerAvgW", v.power_avg_w)
      .nullable("throttleReasons", v.throttle_reasons)
      .nullable("lastXid", v.last_xid);
}

void read_fields(FieldReader& r, AttemptView& a) {
  r.required("attempt", a.attempt)
      .nullable("started", a.started)
      .nullable("ended", a.ended)
      .required("outcome", a.outcome)
      .required("exitCode", a.exit_code)
      .required("placement", a.placement)
      .required("processes", a.processes);
}

void read_fields(FieldReader& r, JobMetricsView& m) {
  r.required("attempt", m.attempt).required("lines", m.lines).required("last", m.last);
  std::optional<Json> tuned;
  r.optional("tuned", tuned);
  m.tuned = tuned.value_or(Json());
}

void read_fields(FieldReader& r, CheckpointSummaryView& c) {
  r.required("step", c.step).required("bytes", c.bytes).required("created", c.created);
}

void read_fields(FieldReader& r, JobDetailView& v) {
  read_fields(r, v.job);
  r.required("spec", v.spec)
      .required("attempts", v.attempts)
      .optional("metrics", v.metrics)
      .optional("checkpoint", v.checkpoint)
      .optional("stepsSinceCheckpoint", v.steps_since_checkpoint)
      .optional("utilization", v.utilization);
}

void read_fields(FieldReader& r, JobListView& v) {
  r.required("items", v.items)
      .required("hasMore", v.has_more)
      .optional("total", v.total)
      .optional("nextCursor", v.next_cursor)
      .optional("prevCursor", v.prev_cursor)
      .optional("nextBefore", v.next_before);
}

void read_fields(FieldReader& r, JobEventView& e) {
  r.required("seq", e.seq)
      .required("time", e.time)
      .required("type", e.type)
      .required("from", e.from)
      .required("to", e.to)
      .required("attempt", e.attempt)
      .required("reason", e.reason);
}

void read_fields(FieldReader& r, JobEventListView& v) {
  r.required("items", v.items);
}

void read_fields(FieldReader& r, ArrayCancelView& v) {
  r.required("arrayJobId", v.array_job_id)
      .required("cancelled", v.cancelled)
      .required("cancelling", v.cancelling);
}

namespace {

template <typename View>
util::Status read_view(const Json& j, View& out) {
  FieldReader r(j, "");
  if (r.ok()) read_fields(r, out);
  return r.status();
}

}  // namespace

util::Status from_json(const Json& j, JobView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, SubmitReplyView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, JobDetailView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, JobListView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, JobEventListView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, ArrayCancelView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, UtilizationView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, WorkerRequest& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, std::vector<PlacementView>& out) {
  const Json holder = Json::object();
  FieldReader r(holder, "");
  r.read(j, "placement", out);
  return r.status();
}

}  // namespace trainyard::model
