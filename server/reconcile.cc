// The reconcile loop's phases. Order matters: outcomes of finished workers are committed
// before their capacity is planned again, and a start is committed as Placed before any process
// is launched, so a crash at any point leaves the store describing every process that exists.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "drive/job_history.h"
#include "sched/plan.h"
#include "server/control_plane.h"
#include "server/tx.h"
#include "util/log.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

// Exit code a worker uses for "I saved a checkpoint, requeue me" (EX_TEMPFAIL); see
// docs/job-contract.md. It is not a failure and does not count against backoffLimit.
constexpr int kExitRequeue = 75;

bool is_failure(const exec::ProcessStatus& s) {
  return s.kind == exec::ExitKind::Lost || s.kind == exec::ExitKind::Signaled ||
         (s.kind == exec::ExitKind::Exited && s.code != 0 && s.code != kExitRequeue);
}

// The notice file's content: what the job needs to decide how to stop in time.
std::string notice_json(const std::string& reason, util::Time deadline, util::Duration grace) {
  const std::string t = util::format_time(deadline);
  return nlohmann::json{
      {"reason", reason}, {"deadline", t}, {"graceSeconds", util::to_seconds(grace)}}
      .dump();
}

util::Duration backoff_delay(const ServerConfig& c, int failures) {
  util::Duration d = c.retry_backoff_initial;
  for (int i = 1; i < failures && d < c.retry_backoff_max; ++i) d *= 2;
  return std::min(d, c.retry_backoff_max);
}

}  // namespace

util::Status ControlPlane::reconcile_once() {
  const util::Duration began = util::WallClock::steady_now();
  util::MutexLock lock(mu_);
  // 1. Observe: Slurm's nodes, the fleet's provider events (capacity_loop.cc), the workers'
  //    exits; attempts that ended and dependencies that broke. Committed before planning.
  Tx outcomes;
  sync_batch_nodes();
  if (fleet_) observe_fleet(outcomes);
  observe_workers(outcomes);
  fail_broken_dependencies(outcomes);
  TY_RETURN_IF_ERROR(commit(outcomes));
  // 2. Nodes that are gone and hold no job leave the book.
  if (fleet_) remove_gone_nodes();
  // 3. Plan and carry it out (plan_apply.cc): preemptions, scale-ups and releases, starts
  //    (committed as Placed before any worker is launched).
  Tx starts;
  apply_plan(starts);
  // 4. Cost (cost_keeping.cc): who holds which node from now on, budgets, and the records
  //    closed meanwhile, in this cycle's commit.
  update_cost_shares();
  cost_.tick(clock_.now(), options_.config.teams, alerts_.get());
  for (auto& row : cost_.take_unstored()) starts.cost.push_back(std::move(row));
  util::Status st = commit(starts);
  // 5. Telemetry: a job whose attempt ended this cycle stops counting on its GPUs now.
  if (recorder_) recorder_->set_placements(telemetry_placements());
  if (options_.batch_sampler != nullptr) options_.batch_sampler->set_workers(batch_worker_gpus());
  metrics_.schedule_cycle.observe(util::to_seconds(util::WallClock::steady_now() - began));
  return st;
}

util::Status ControlPlane::commit(Tx& tx) {
  if (tx.empty()) return util::Status::ok();
  util::Status st = committer_->commit([&](store::Store& s) { return tx.write(s); });
  if (!st.is_ok()) {
    // Memory is already ahead of the store; the only safe way on is a restart from the store.
    TY_LOG_ERROR("cannot commit to the state store, stopping: {}", st.to_string());
    std::fflush(nullptr);
    std::_Exit(70);
  }
  tx = Tx{};
  return st;
}

void ControlPlane::begin_stop(ActiveJob& job, StopCause cause, const std::string& reason, Tx& tx,
                              std::optional<util::Time> deadline) {
  const util::Time now = clock_.now();
  const StopCause before = job.stop;
  const util::Time before_kill_at = job.kill_at;
  if (before != StopCause::None && cause == StopCause::Preempt) {
    // Already stopping: keep the first cause (a cancel stays a cancel), only the deadline moves.
    cause = before;
  }
  job.stop = cause;
  if (before == StopCause::None || cause != before) job.stop_reason = reason;
  if (before != StopCause::None && cause == StopCause::Cancel) {
    // Already stopping (preempted, say): end as cancelled, keep the running grace period.
  } else if (deadline) {
    job.kill_at = before != StopCause::None ? std::min(job.kill_at, *deadline) : *deadline;
  } else {
    job.kill_at = cause == StopCause::Failure ? now : now + job.manifest.checkpoint.grace_period;
  }
  if (cause == StopCause::Preempt && job.rec.state == model::JobState::Running) {
    transition(job, model::JobState::Preempting, reason, tx);
  } else {
    static constexpr const char* kType[] = {"", "Preempting", "CancelRequested", "DeadlineExceeded",
                                            "WorkerFailed"};
    tx.events.push_back({.job = job.rec.id,
                         .at = now,
                         .type = kType[static_cast<int>(cause)],
                         .to_state = std::string(model::job_state_name(job.rec.state)),
                         .attempt = job.rec.attempt,
                         .reason = reason});
  }
  // The workers were told already, unless an interruption brought their deadline forward.
  if (before != StopCause::None && !(deadline && job.kill_at < before_kill_at)) return;
  for (auto& w : job.workers) {
    if (w.finished || !w.ref.known()) continue;
    util::Status st = cause == StopCause::Failure
                          ? executor_.kill(w.ref)
                          : executor_.notify(w.ref, w.run_dir, options_.config.notice_signal,
                                             notice_json(reason, job.kill_at, job.kill_at - now));
    if (!st.is_ok()) TY_LOG_WARN("job {} rank {}: {}", job.rec.id.value(), w.rank, st.message());
  }
}

void ControlPlane::observe_workers(Tx& tx) {
  const util::Time now = clock_.now();
  executor_.begin_cycle();
  std::vector<util::JobId> ended;
  for (auto& [id, job] : jobs_.active()) {
    if (job.workers.empty()) continue;
    bool any_running = false;
    for (auto& w : job.workers) {
      if (!w.finished) {
        if (auto better = executor_.resolved(w.ref, w.run_dir)) w.ref = *better;
        w.status = !w.ref.known() ? exec::ProcessStatus{exec::ExitKind::Lost, 0,
                                                        "the worker process was never started"}
                                  : executor_.poll(w.ref, w.run_dir);
        w.finished = w.status.kind != exec::ExitKind::Running;
        if (w.finished && job.stop == StopCause::None && stop_for_outside_end(job, w, tx)) {
          // The batch system ended it for a reason that is not the job's failure.
        } else if (w.finished && job.stop == StopCause::None && is_failure(w.status)) {
          job.failure_detail = fmt::format("rank {} {}", w.rank, w.status.detail);
          begin_stop(job, StopCause::Failure, "worker " + job.failure_detail, tx);
        }
      }
      any_running = any_running || !w.finished;
    }
    if (!any_running) {
      finish_attempt(job, tx);
      if (model::is_terminal(job.rec.state)) ended.push_back(id);
      continue;
    }
    const util::Duration limit = job.manifest.spec.runtime_limit;
    if (job.stop == StopCause::None && limit.count() > 0 && now - job.rec.started >= limit) {
      begin_stop(job, StopCause::Deadline,
                 fmt::format("ran longer than activeDeadlineSeconds={}", limit.count() / 1000000),
                 tx);
    }
    if (job.stop != StopCause::None && now >= job.kill_at) {
      for (auto& w : job.workers) kill_worker(w);
    }
  }
  for (auto id : ended) jobs_.retire(id);
}

bool ControlPlane::stop_for_outside_end(ActiveJob& job, const WorkerProcess& w, Tx& tx) {
  switch (w.status.kind) {
    case exec::ExitKind::NotStarted:
      job.launch_refused = true;
      job.failure_detail = w.status.detail;
      begin_stop(job, StopCause::Failure, w.status.detail, tx);
      return true;
    case exec::ExitKind::Interrupted:
      job.interrupted = true;
      begin_stop(job, StopCause::Preempt, w.status.detail, tx, clock_.now());
      return true;
    case exec::ExitKind::Cancelled:
      begin_stop(job, StopCause::Cancel, w.status.detail, tx, clock_.now());
      return true;
    default:
      return false;
  }
}

double ControlPlane::mtbf_estimate_seconds() const {
  const double observed = util::to_seconds(preemptible_run_time_);
  return (util::to_seconds(options_.config.mtbf_prior) + observed) /
         static_cast<double>(1 + interruptions_);
}

void ControlPlane::finish_attempt(ActiveJob& job, Tx& tx) {
  const util::Time now = clock_.now();
  account_attempt(job, now, tx);
  store::AttemptRecord attempt{.job = job.rec.id,
                               .attempt = job.rec.attempt,
                               .started = job.rec.started,
                               .ended = now,
                               .placement_json = job.rec.placement_json,
                               .processes_json = processes_json(job)};
  for (const auto& w : job.workers) {
    if (w.status.kind != exec::ExitKind::Exited || w.status.code != 0)
      attempt.exit_code = w.status.code;
  }
  const StopCause cause = job.stop;
  const std::string stop_reason = job.stop_reason;
  job.workers.clear();
  job.placement.clear();
  job.stop = StopCause::None;
  attempt.outcome = cause == StopCause::Failure
                        ? end_failed_attempt(job, now, tx)
                        : end_attempt(job, cause, stop_reason, attempt.exit_code, tx);
  job.failure_detail.clear();
  tx.attempts.push_back(std::move(attempt));
}

void ControlPlane::account_attempt(ActiveJob& job, util::Time now, Tx& tx) {
  // At the share the attempt held: an elastic job's placed workers, not the spec's count.
  job.rec.attained_gpu_time = drive::attained_service(
      job.rec.attained_gpu_time, job.rec.started,
      drive::attempt_milli(job.manifest.spec.worker, attempt_workers(job)), now);
  if (job.manifest.spec.preemptible) {
    preemptible_run_time_ += now - job.rec.started;
    if (job.stop == StopCause::Preempt) ++interruptions_;
  }
  if (job.stop != StopCause::Preempt) return;
  // Work since the newest checkpoint is redone by the next attempt: priced into the ledger.
  const util::Duration lost = record_lost_work(job, now);
  if (job.interrupted_node.empty()) return;
  tx.events.push_back(
      {.job = job.rec.id,
       .at = now,
       .type = "Interrupted",
       .to_state = std::string(model::job_state_name(job.rec.state)),
       .attempt = job.rec.attempt,
       .reason = fmt::format("interrupted: node {} reclaimed by the provider; lost {:.1f} s "
                             "of work since the last checkpoint",
                             job.interrupted_node, util::to_seconds(lost))});
}

std::string ControlPlane::end_attempt(ActiveJob& job, StopCause cause,
                                      const std::string& stop_reason, int exit_code, Tx& tx) {
  switch (cause) {
    case StopCause::Preempt: {
      const bool interrupted = !job.interrupted_node.empty() || job.interrupted;
      job.interrupted = false;
      job.interrupted_node.clear();
      transition(job, model::JobState::Pending,
                 stop_reason + "; requeued, resumes from its checkpoint dir", tx);
      return interrupted ? "interrupted" : "preempted";
    }
    case StopCause::Cancel:
      transition(job, model::JobState::Cancelled, stop_reason, tx);
      return "cancelled";
    case StopCause::Deadline:
      transition(job, model::JobState::Failed, "DeadlineExceeded: " + stop_reason, tx);
      return "failed";
    case StopCause::None:
    case StopCause::Failure:
      break;
  }
  if (exit_code == kExitRequeue) {
    transition(job, model::JobState::Pending,
               "a worker exited 75 (checkpointed, asks to be requeued); resumes from its "
               "checkpoint dir",
               tx);
    return "requeued";
  }
  transition(job, model::JobState::Succeeded, "all workers exited with code 0", tx);
  return "succeeded";
}

std::string ControlPlane::end_failed_attempt(ActiveJob& job, util::Time now, Tx& tx) {
  if (!job.unreadable_spec.empty()) {
    transition(job, model::JobState::Failed, job.unreadable_spec, tx);
    return "failed";
  }
  if (job.launch_refused || job.launch_interrupted) {
    requeue_unstarted(job, now, tx);
    return "not-started";
  }
  const bool lost = job.failure_detail.find("never started") != std::string::npos ||
                    job.failure_detail.find("lost") != std::string::npos;
  job.rec.failures += 1;
  const int limit = job.manifest.backoff_limit;
  if (job.rec.failures <= limit) {
    const util::Duration delay = backoff_delay(options_.config, job.rec.failures);
    job.rec.not_before = now + delay;
    transition(job, model::JobState::Pending,
               fmt::format("attempt {} failed ({}); retry {}/{} in {:.0f}s", job.rec.attempt,
                           job.failure_detail, job.rec.failures, limit, util::to_seconds(delay)),
               tx);
  } else {
    transition(job, model::JobState::Failed,
               fmt::format("failed {} time(s), backoffLimit {} reached; last: {}", job.rec.failures,
                           limit, job.failure_detail),
               tx);
  }
  return lost ? "lost" : "failed";
}

void ControlPlane::requeue_unstarted(ActiveJob& job, util::Time now, Tx& tx) {
  if (job.launch_refused) {
    job.launch_refused = false;
    job.rec.not_before = now + options_.config.retry_backoff_initial;
    transition(
        job, model::JobState::Pending,
        fmt::format("{}; requeued (not counted as a failure), next try in {:.0f}s",
                    job.failure_detail, util::to_seconds(options_.config.retry_backoff_initial)),
        tx);
    return;
  }
  job.launch_interrupted = false;
  transition(job, model::JobState::Pending,
             fmt::format("the server restarted while launching the workers ({}); requeued "
                         "(not counted as a failure)",
                         job.failure_detail),
             tx);
}

void ControlPlane::fail_broken_dependencies(Tx& tx) {
  std::vector<util::JobId> failed;
  for (auto& [id, job] : jobs_.active()) {
    if (job.rec.state != model::JobState::Pending) continue;
    for (auto dep : job.depends_on) {
      const auto state = dependency_state(dep);
      if (!state || !model::is_terminal(*state) || *state == model::JobState::Succeeded) continue;
      transition(job, model::JobState::Failed,
                 fmt::format("dependency {} ended {}; this job can never start", dep.value(),
                             model::job_state_name(*state)),
                 tx);
      failed.push_back(id);
      break;
    }
  }
  for (auto id : failed) jobs_.retire(id);
}

std::optional<model::JobState> ControlPlane::dependency_state(util::JobId dep) {
  if (auto state = jobs_.known_state(dep)) return state;
  util::MutexLock lock(reader_mu_);
  auto rec = reader_->get_job(dep);
  if (!rec.is_ok() || !*rec) return std::nullopt;
  jobs_.remember_ended(dep, (*rec)->state);
  return (*rec)->state;
}

}  // namespace trainyard::server
