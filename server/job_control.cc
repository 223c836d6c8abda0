// ControlPlane's job controls: hold and release a pending job, change a pending job's priority
// class, and cancel every task of a job array. Like submit and cancel, each commits to the store
// before it returns and wakes the reconcile loop, so the next cycle plans with the change.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/job.h"
#include "server/control_plane.h"
#include "server/job_arrays.h"
#include "server/tx.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

// Holds and updates keep a job pending; their events say so.
const std::string kPending(model::job_state_name(model::JobState::Pending));

// Why `verb` cannot change job `rec` unless it is pending; OK when it is.
util::Status require_pending(const store::JobRecord& rec, bool has_workers, std::string_view verb,
                             std::string_view why) {
  const int64_t id = rec.id.value();
  if (model::is_terminal(rec.state))
    return util::failed_precondition(
        fmt::format("job {} has already ended ({}); only a pending job can be {}", id,
                    model::job_state_name(rec.state), verb));
  if (rec.state != model::JobState::Pending || has_workers)
    return util::failed_precondition(
        fmt::format("job {} is {}; only a pending job can be {} ({})", id,
                    has_workers ? "running" : model::job_state_name(rec.state), verb, why));
  return util::Status::ok();
}

// The job in memory that a control acts on; an error when it has ended, or when its submission
// has committed but not reached memory yet.
util::Result<ActiveJob*> controlled_job(JobBook& jobs, const store::JobRecord& rec,
                                        std::string_view verb) {
  if (ActiveJob* job = jobs.find(rec.id)) return job;
  TY_RETURN_IF_ERROR(require_pending(rec, false, verb, ""));
  return util::unavailable(fmt::format("job {} is being submitted; try again", rec.id.value()));
}

struct PriorityChoice {
  std::string name;
  int value = 0;
};

// The body of an update: {"priorityClass": "low" | "normal" | "high"}.
util::Result<PriorityChoice> parse_update(std::string_view body) {
  const auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return util::invalid_argument(
        "the body must be a JSON object such as {\"priorityClass\": \"high\"}");
  for (const auto& [key, value] : doc.items()) {
    if (key != "priorityClass")
      return util::invalid_argument(
          fmt::format("unknown field \"{}\"; the fields that can change: priorityClass", key));
  }
  if (!doc.contains("priorityClass"))
    return util::invalid_argument("nothing to change: give priorityClass (low, normal or high)");
  const auto& cls = doc["priorityClass"];
  const std::string name = cls.is_string() ? cls.get<std::string>() : cls.dump();
  if (name == "low") return PriorityChoice{name, model::kPriorityLow};
  if (name == "normal") return PriorityChoice{name, model::kPriorityNormal};
  if (name == "high") return PriorityChoice{name, model::kPriorityHigh};
  return util::invalid_argument(
      fmt::format("priorityClass must be one of low, normal, high, got '{}'", name));
}

}  // namespace

util::Result<nlohmann::json> ControlPlane::hold(util::JobId id, const Principal& who) {
  return set_held(id, who, true);
}

util::Result<nlohmann::json> ControlPlane::release(util::JobId id, const Principal& who) {
  return set_held(id, who, false);
}

util::Result<nlohmann::json> ControlPlane::set_held(util::JobId id, const Principal& who,
                                                    bool held) {
  const char* verb = held ? "held" : "released";
  TY_ASSIGN_OR_RETURN(store::JobRecord rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, rec.id, rec.team));
  Tx tx;
  util::MutexLock lock(mu_);
  TY_ASSIGN_OR_RETURN(ActiveJob * in, controlled_job(jobs_, rec, verb));
  ActiveJob& job = *in;
  if (held) {
    TY_RETURN_IF_ERROR(require_pending(job.rec, !job.workers.empty(), verb,
                                       "a hold keeps a job from starting; `trainyard cancel` "
                                       "stops one that runs"));
  }
  if (job.rec.held == held) return job_json(&job, job.rec);  // nothing changes
  const util::Time now = clock_.now();
  job.rec.held = held;
  job.rec.updated = now;
  job.wait_reason = held ? held_reason(id) : "released; not yet examined by the scheduler";
  tx.jobs.push_back(job.rec);
  tx.events.push_back({.job = id,
                       .at = now,
                       .type = held ? "Held" : "Released",
                       .from_state = kPending,
                       .to_state = kPending,
                       .attempt = job.rec.attempt,
                       .reason = fmt::format("{} by {}", verb, who.name)});
  TY_RETURN_IF_ERROR(commit(tx));
  if (!held) {
    wake_ = true;
    loop_cv_.notify_all();
  }
  return job_json(&job, job.rec);
}

util::Result<nlohmann::json> ControlPlane::update(util::JobId id, std::string_view body,
                                                  const Principal& who) {
  TY_ASSIGN_OR_RETURN(const PriorityChoice choice, parse_update(body));
  TY_ASSIGN_OR_RETURN(store::JobRecord rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, rec.id, rec.team));
  Tx tx;
  util::MutexLock lock(mu_);
  TY_ASSIGN_OR_RETURN(ActiveJob * in, controlled_job(jobs_, rec, "updated"));
  ActiveJob& job = *in;
  TY_RETURN_IF_ERROR(require_pending(job.rec, !job.workers.empty(), "updated",
                                     "the priority class orders jobs waiting to start"));
  model::JobSpec& spec = job.manifest.spec;
  if (spec.priority_class == choice.name && spec.priority == choice.value)
    return job_json(&job, job.rec);
  const util::Time now = clock_.now();
  const std::string reason =
      fmt::format("priority class {} -> {} by {}", spec.priority_class, choice.name, who.name);
  spec.priority_class = choice.name;
  spec.priority = choice.value;
  job.rec.priority = choice.value;
  job.rec.manifest_json = model::job_manifest_to_json(job.manifest);
  job.rec.updated = now;
  tx.jobs.push_back(job.rec);
  tx.events.push_back({.job = id,
                       .at = now,
                       .type = "Updated",
                       .from_state = kPending,
                       .to_state = kPending,
                       .attempt = job.rec.attempt,
                       .reason = reason});
  TY_RETURN_IF_ERROR(commit(tx));
  wake_ = true;
  loop_cv_.notify_all();
  return job_json(&job, job.rec);
}

util::Result<nlohmann::json> ControlPlane::cancel_array(util::JobId array_id,
                                                        const Principal& who) {
  TY_ASSIGN_OR_RETURN(store::JobRecord first, load_record(array_id));
  if (first.array_index < 0 || first.array_job_id != array_id)
    return util::invalid_argument(fmt::format(
        "job {} is not a job array's id (an array's id is its first task's id, which `trainyard "
        "run --array` prints); cancel a single job with `trainyard cancel {}`",
        array_id.value(), array_id.value()));
  TY_RETURN_IF_ERROR(check_job_access(who, first.id, first.team));
  Tx tx;
  model::ArrayCancelView out{.array_job_id = array_id.value()};
  util::MutexLock lock(mu_);
  const std::string reason =
      fmt::format("cancelled with array {} by {}", array_id.value(), who.name);
  for (auto it = jobs_.active().lower_bound(array_id); it != jobs_.active().end();) {
    ActiveJob& job = it->second;
    if (job.rec.array_job_id != array_id) {
      ++it;
      continue;
    }
    if (job.rec.state == model::JobState::Pending && job.workers.empty()) {
      transition(job, model::JobState::Cancelled, reason, tx);
      out.cancelled.push_back(it->first.value());
      it = jobs_.retire(it);
      continue;
    }
    if (job.stop != StopCause::Cancel) begin_stop(job, StopCause::Cancel, reason, tx);
    out.cancelling.push_back(it->first.value());
    ++it;
  }
  TY_RETURN_IF_ERROR(commit(tx));
  wake_ = true;
  loop_cv_.notify_all();
  return model::to_json(out);
}

}  // namespace trainyard::server
