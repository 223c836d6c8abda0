#include "server/job_arrays.h"

#include <fmt/format.h>

#include "model/job_array.h"
#include "util/status.h"

namespace trainyard::server {
namespace {

// A pending job that holds no workers waits for the scheduler; every other one holds (or is
// about to hold) GPUs and counts against its array's limit.
bool occupies_slot(const ActiveJob& job) {
  return job.rec.state != model::JobState::Pending || !job.workers.empty();
}

store::JobRecord new_record(const model::JobManifest& m, util::Time now) {
  return store::JobRecord{.name = m.spec.name,
                          .team = m.spec.team,
                          .state = model::JobState::Pending,
                          .attempt = 1,
                          .priority = m.spec.priority,
                          .manifest_json = model::job_manifest_to_json(m),
                          .submitted = now,
                          .updated = now,
                          .queued_since = now,
                          .reason = "submitted"};
}

}  // namespace

std::vector<NewJob> expand_submission(const model::JobManifest& m, util::Time now) {
  if (m.array.empty()) return {NewJob{.manifest = m, .rec = new_record(m, now)}};
  auto spec = model::parse_array_spec(m.array);
  TY_CHECK_MSG(spec.is_ok(), "expand_submission: the manifest's array was not checked");
  std::vector<NewJob> out;
  out.reserve(spec->indices.size());
  for (int index : spec->indices) {
    model::JobManifest task = m;
    task.array.clear();
    task.spec.name = model::array_task_name(m.spec.name, index);
    store::JobRecord rec = new_record(task, now);
    rec.array_index = index;
    rec.array_limit = spec->limit;
    out.push_back(NewJob{.manifest = std::move(task), .rec = std::move(rec)});
  }
  return out;
}

util::Status insert_new_jobs(store::Store& s, std::vector<NewJob>& jobs, const std::string& who,
                             util::Time now) {
  util::JobId array_id{0};
  for (NewJob& job : jobs) {
    TY_ASSIGN_OR_RETURN(job.rec.id, s.insert_job(job.rec));
    if (job.rec.array_index >= 0) {
      if (array_id.value() == 0) array_id = job.rec.id;
      job.rec.array_job_id = array_id;
      TY_RETURN_IF_ERROR(s.update_job(job.rec));
    }
    const std::string reason = job.rec.array_index < 0
                                   ? fmt::format("submitted by {}", who)
                                   : fmt::format("submitted by {} as task {} of array {}", who,
                                                 job.rec.array_index, array_id.value());
    auto seq =
        s.append_event({.job = job.rec.id,
                        .at = now,
                        .type = "Submitted",
                        .to_state = std::string(model::job_state_name(model::JobState::Pending)),
                        .attempt = 1,
                        .reason = reason});
    TY_RETURN_IF_ERROR(seq.status());
  }
  return util::Status::ok();
}

std::vector<std::pair<std::string, std::string>> worker_env(const ActiveJob& job) {
  auto env = job.manifest.process.env;
  if (job.rec.array_index >= 0) {
    env.emplace_back("TRAINYARD_ARRAY_INDEX", std::to_string(job.rec.array_index));
    env.emplace_back("TRAINYARD_ARRAY_JOB_ID", std::to_string(job.rec.array_job_id.value()));
  }
  return env;
}

std::string held_reason(util::JobId id) {
  return fmt::format("held by user; `trainyard release {}` lets the scheduler start it",
                     id.value());
}

PendingGates::PendingGates(const std::map<util::JobId, ActiveJob>& active) {
  for (const auto& [id, job] : active) {
    if (job.rec.array_limit > 0 && occupies_slot(job)) ++busy_[job.rec.array_job_id];
  }
}

std::optional<std::string> PendingGates::hold_back(const ActiveJob& job) {
  if (occupies_slot(job)) return std::nullopt;
  if (job.rec.held) return held_reason(job.rec.id);
  if (job.rec.array_limit <= 0) return std::nullopt;
  int& busy = busy_[job.rec.array_job_id];
  if (busy < job.rec.array_limit) {
    ++busy;
    return std::nullopt;
  }
  return fmt::format(
      "array limit: array {} runs at most {} tasks at once (%{}) and {} are running or starting; "
      "it starts when one of them ends",
      job.rec.array_job_id.value(), job.rec.array_limit, job.rec.array_limit, busy);
}

void add_job_controls(model::JobView& v, const store::JobRecord& rec) {
  v.held = rec.held;
  if (rec.array_index < 0) return;
  v.array = model::JobArrayView{
      .job_id = rec.array_job_id.value(), .index = rec.array_index, .limit = rec.array_limit};
}

}  // namespace trainyard::server
