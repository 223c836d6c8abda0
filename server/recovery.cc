// Startup after a clean stop or a crash: every job that had not ended is loaded from the store.
// Workers that are still alive are re-adopted (their pids and start times are in the store, or
// in the pid file the wrapper wrote if the crash came before the store heard of them); workers
// that ended while the server was down get their real outcome from their exit_status file on
// the next reconcile, and those that left no trace are reported lost and retried. No stored job
// is ever skipped: one whose spec cannot be read back is ended with that reason, its GPUs booked
// until its processes are gone; one whose launch the crash interrupted is requeued uncounted.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/control_plane.h"
#include "server/tx.h"
#include "util/log.h"

namespace trainyard::server {
namespace {

std::vector<util::JobId> ids_of(const std::vector<std::string>& deps) {
  std::vector<util::JobId> out;
  for (const auto& d : deps) {
    try {
      out.emplace_back(std::stoll(d));
    } catch (const std::exception&) {
      // Names are resolved to ids at submission; a stored name cannot occur.
    }
  }
  return out;
}

// What is known of a job whose stored spec no longer parses: its name, team and priority from
// the record, and its gang's shape from the stored placement (or, failing that, its processes),
// so the snapshot books exactly the GPUs it holds until its workers are gone.
model::JobManifest stand_in_manifest(const store::JobRecord& rec,
                                     const std::optional<store::AttemptRecord>& attempt) {
  model::JobManifest m;
  m.spec.name = rec.name;
  m.spec.team = rec.team;
  m.spec.priority = rec.priority;
  m.spec.preemptible = false;
  m.backoff_limit = 0;
  m.checkpoint.grace_period = util::Duration(0);
  int workers = 1;
  const auto placement = nlohmann::json::parse(rec.placement_json, nullptr, false);
  if (placement.is_array() && !placement.empty()) {
    int gpus = 0;
    for (const auto& a : placement) {
      const int worker = a.value("worker", 0);
      workers = std::max(workers, worker + 1);
      if (worker != 0 || a.value("gpu", -1) < 0) continue;
      const int milli = a.value("milli", 1000);
      if (a.contains("mig_profile") && a["mig_profile"].is_string()) {
        m.spec.worker.mig_profile = a["mig_profile"].get<std::string>();
      } else if (milli < 1000) {
        m.spec.worker.gpu_milli = model::GpuMilli(milli);
      } else {
        ++gpus;
      }
    }
    m.spec.worker.gpus = gpus;
  } else if (attempt && !attempt->processes_json.empty()) {
    const auto procs = nlohmann::json::parse(attempt->processes_json, nullptr, false);
    if (procs.is_array())
      for (const auto& p : procs) workers = std::max(workers, p.value("rank", 0) + 1);
  }
  m.spec.workers = workers;
  return m;
}

}  // namespace

util::Status ControlPlane::recover() {
  TY_ASSIGN_OR_RETURN(auto records, store_->active_jobs());
  Tx tx;
  for (auto& rec : records) {
    ActiveJob job{.rec = rec};
    auto manifest =
        model::parse_stored_job_manifest(rec.manifest_json, fmt::format("job {}", rec.id.value()));
    if (manifest.is_ok()) {
      job.manifest = std::move(*manifest);
      job.depends_on = ids_of(job.manifest.depends_on);
    } else {
      TY_ASSIGN_OR_RETURN(auto attempt, store_->attempt(rec.id, rec.attempt));
      job.manifest = stand_in_manifest(rec, attempt);
      job.unreadable_spec =
          fmt::format("the stored spec cannot be read back ({}); submit the job again",
                      manifest.status().message());
      TY_LOG_ERROR("job {}: {}", rec.id.value(), job.unreadable_spec);
    }
    jobs_.see_team(rec.team);
    const auto state = rec.state;
    if (state == model::JobState::Admitted) {
      transition(job, model::JobState::Pending, "the server restarted before placing it", tx);
    } else if (state == model::JobState::Placed || state == model::JobState::Running ||
               state == model::JobState::Preempting) {
      TY_RETURN_IF_ERROR(readopt(job, tx));
    }
    if (!job.unreadable_spec.empty()) {
      if (job.workers.empty()) {
        // Nothing runs: it ends now.
        transition(job, model::JobState::Failed, job.unreadable_spec, tx);
        jobs_.remember_ended(rec.id, job.rec.state);
        continue;
      }
      // Its processes are stopped; finish_attempt() ends it once they are gone.
      job.stop = StopCause::Failure;
      job.stop_reason = job.unreadable_spec;
      job.failure_detail = job.unreadable_spec;
      job.kill_at = clock_.now();
      for (auto& w : job.workers) kill_worker(w);
    }
    job.wait_reason = "not yet examined by the scheduler";
    jobs_.admit(std::move(job));
  }
  return commit(tx);
}

namespace {

// The workers an attempt's stored processes_json names, by rank; none when it is unreadable.
std::map<int, WorkerProcess> stored_workers(const std::string& processes_json) {
  std::map<int, WorkerProcess> by_rank;
  if (processes_json.empty()) return by_rank;
  try {
    for (const auto& p : nlohmann::json::parse(processes_json)) {
      WorkerProcess w{.rank = p.at("rank").get<int>(),
                      .ref = {p.at("pid").get<int>(), p.at("start_ticks").get<int64_t>(),
                              p.value("batch_job", int64_t{0})},
                      .run_dir = p.at("run_dir").get<std::string>()};
      by_rank[w.rank] = w;
    }
  } catch (const nlohmann::json::exception&) {
    by_rank.clear();
  }
  return by_rank;
}

}  // namespace

void ControlPlane::kill_worker(const WorkerProcess& w) {
  if (w.ref.known() && !w.finished) (void)executor_.kill(w.ref);
}

util::Status ControlPlane::readopt(ActiveJob& job, Tx& tx) {
  ensure_placeholder_nodes(job.rec.placement_json);
  auto placement = placement_from_json(job.rec.placement_json);
  if (placement.is_ok()) job.placement = *placement;
  const int world = attempt_workers(job);
  TY_ASSIGN_OR_RETURN(auto attempt, store_->attempt(job.rec.id, job.rec.attempt));
  const int found = find_workers(
      job, attempt ? stored_workers(attempt->processes_json) : std::map<int, WorkerProcess>{});
  if (!placement.is_ok()) {
    // Its GPUs are gone (the machine changed): stop what still runs and retry elsewhere.
    for (auto& w : job.workers) kill_worker(w);
    job.failure_detail = "lost: " + placement.status().message();
    job.stop = StopCause::Failure;
    job.placement.clear();
  }
  if (job.rec.state == model::JobState::Placed && found == 0) {
    requeue_never_launched(job, tx);
    return util::Status::ok();
  }
  // Some ranks started and others not: the launch was cut short, which is not the job's fault.
  if (job.rec.state == model::JobState::Placed && found < world) job.launch_interrupted = true;
  const std::string reason =
      fmt::format("the server restarted; re-adopted {} of {} worker(s)", found, world);
  if (job.rec.state == model::JobState::Placed) {
    transition(job, model::JobState::Running, reason, tx);
  } else {
    tx.events.push_back({.job = job.rec.id,
                         .at = clock_.now(),
                         .type = "Adopted",
                         .to_state = std::string(model::job_state_name(job.rec.state)),
                         .attempt = job.rec.attempt,
                         .reason = reason});
  }
  TY_RETURN_IF_ERROR(resume_stop(job));
  stop_for_lost_workers(job);
  return util::Status::ok();
}

int ControlPlane::find_workers(ActiveJob& job, std::map<int, WorkerProcess> by_rank) {
  int found = 0;
  const int world = attempt_workers(job);
  for (int rank = 0; rank < world; ++rank) {
    WorkerProcess& w = by_rank[rank];
    w.rank = rank;
    if (w.run_dir.empty()) w.run_dir = run_dir(job.rec.id, job.rec.attempt, rank).string();
    if (!w.ref.known()) {
      auto ref = executor_.find_attempt(job.rec.id, job.rec.attempt, rank, w.run_dir);
      if (ref.is_ok()) w.ref = *ref;
    }
    if (w.ref.known()) ++found;
    job.workers.push_back(w);
  }
  return found;
}

void ControlPlane::requeue_never_launched(ActiveJob& job, Tx& tx) {
  // Placed was committed but the server stopped before it launched any worker: the attempt
  // never ran, so the job is simply queued again (not a failure, no backoff).
  tx.attempts.push_back({.job = job.rec.id,
                         .attempt = job.rec.attempt,
                         .started = job.rec.started,
                         .ended = clock_.now(),
                         .placement_json = job.rec.placement_json,
                         .outcome = "not-started"});
  job.workers.clear();
  job.placement.clear();
  job.rec.placement_json.clear();
  job.stop = StopCause::None;
  job.failure_detail.clear();
  transition(job, model::JobState::Pending,
             "the server restarted before launching the workers; requeued (not counted as a "
             "failure)",
             tx);
}

util::Status ControlPlane::resume_stop(ActiveJob& job) {
  const util::Time kill_at = clock_.now() + job.manifest.checkpoint.grace_period;
  if (job.rec.state == model::JobState::Preempting) {
    job.stop = StopCause::Preempt;
    job.stop_reason = job.rec.reason;
    job.kill_at = kill_at;
    return util::Status::ok();
  }
  if (job.stop != StopCause::None) return util::Status::ok();
  TY_ASSIGN_OR_RETURN(auto events, store_->events(job.rec.id, 0, 100000));
  for (const auto& e : events) {
    if (e.type == "CancelRequested" && e.attempt == job.rec.attempt) {
      job.stop = StopCause::Cancel;
      job.stop_reason = e.reason;
      job.kill_at = kill_at;
    }
  }
  return util::Status::ok();
}

void ControlPlane::stop_for_lost_workers(ActiveJob& job) {
  for (auto& w : job.workers) {
    if (w.ref.known()) continue;
    w.finished = true;
    w.status = {exec::ExitKind::Lost, 0, "lost: no trace of the worker after a server restart"};
    if (job.stop != StopCause::None) continue;
    job.stop = StopCause::Failure;
    job.failure_detail = fmt::format("rank {} {}", w.rank, w.status.detail);
    job.kill_at = clock_.now();
    for (auto& other : job.workers) kill_worker(other);
  }
}

}  // namespace trainyard::server
