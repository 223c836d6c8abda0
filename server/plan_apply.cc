// Reconcile phase 3: build the snapshot, run sched::plan(), and carry out its preemptions and
// starts. Starts are committed as Placed (with their GPUs) before any worker is launched.
#include <fmt/format.h>

#include "drive/job_history.h"
#include "exec/checkpoint_reader.h"
#include "model/accelerator.h"
#include "sched/decayed_usage.h"
#include "sched/invariants.h"
#include "sched/plan.h"
#include "sched/policy.h"
#include "sched/snapshot_builder.h"
#include "server/control_plane.h"
#include "server/fleet.h"
#include "server/job_arrays.h"
#include "server/tx.h"
#include "util/log.h"

namespace trainyard::server {
namespace {

// How often a running job's checkpoint directory is looked at (a listing and one stat).
constexpr util::Duration kCheckpointPoll = std::chrono::seconds(5);

}  // namespace

sched::Snapshot ControlPlane::build_snapshot(std::vector<util::JobId>& backing_off) {
  const util::Time now = clock_.now();
  sched::Snapshot snap;
  snap.now = now;
  add_capacity(snap);
  PendingGates gates(jobs_.active());
  for (auto& [id, job] : jobs_.active()) {
    if (job.workers.empty() && job.rec.not_before > now) {
      backing_off.push_back(id);
      continue;
    }
    if (auto held_back = gates.hold_back(job)) {
      job.wait_reason = std::move(*held_back);
      continue;
    }
    snap.jobs.push_back(snapshot_job(snap, job));
  }
  return snap;
}

void ControlPlane::add_capacity(sched::Snapshot& snap) {
  // Pools first: their GPU models are interned before teams resolve quotas, and a node joins
  // its pool by name.
  if (fleet_) fleet_->add_pools(snap);
  for (const auto& n : nodes_) {
    sched::add_node(snap, n.node);
    if (n.cloud && cost_.billed(n.node.name))
      snap.nodes.back().idle_since = cost_.idle_since(n.node.name).value_or(util::Time::max());
    snap.nodes.back().gpus_held_outside = n.gpus_held_outside;
    snap.nodes.back().cpu_held_outside = model::CpuMilli(n.cpu_held_outside_milli);
  }
  for (const auto& t : options_.config.teams) {
    sched::add_team(snap, t);
    if (auto left = cost_.budget_left(t.name)) snap.teams.back().budget_left = *left;
  }
  for (const auto& [id, job] : jobs_.active()) {
    if (sched::find_team(snap, job.rec.team) < 0)
      sched::add_team(snap, model::Team{.name = job.rec.team});
  }
}

sched::SnapshotJob ControlPlane::snapshot_job(const sched::Snapshot& snap, ActiveJob& job) {
  const util::Time now = snap.now;
  const bool running = !job.workers.empty();
  sched::SnapshotJob sj =
      sched::make_pending_job(snap, job.rec.id, job.manifest.spec, job.rec.submitted);
  for (const auto& [workers, pace] : job.measured_speed)
    sj.measured.push_back({.workers = workers, .steps_per_second = pace});
  sj.queued_since = job.rec.queued_since;
  sj.attained_gpu_time = job.rec.attained_gpu_time;
  // What is left of the job's own time limit: the server's estimate of its remaining run time
  // (the simulator knows it), which srtf orders by. Unknown without a limit.
  if (sj.runtime_limit > util::Duration(0))
    sj.remaining =
        drive::remaining(sj.runtime_limit, running ? now - job.rec.started : util::Duration(0));
  if (!running) {
    // How long its last attempt ran, as the simulator sets it: Tiresias promotes a job that
    // has waited starvation_factor times that long.
    if (job.rec.attempt > 1 && job.rec.started > util::kEpoch)
      sj.last_run = drive::attempt_length(job.rec.started, job.rec.queued_since);
    for (auto dep : job.depends_on) {
      const auto state = dependency_state(dep);
      if (state && *state == model::JobState::Succeeded) continue;
      sj.waiting_on = dep;
      break;
    }
    return sj;
  }
  sj.phase = job.stop == StopCause::None ? sched::JobPhase::Running : sched::JobPhase::Preempting;
  sj.started = job.rec.started;
  sj.placement = nodes_.to_assignments(job.placement);
  sj.workers = attempt_workers(job);
  if (now - job.checkpoint_polled >= kCheckpointPoll) {
    job.checkpoint_polled = now;
    job.last_checkpoint = newest_checkpoint_time(job).value_or(util::Time{});
    if (job.manifest.spec.elastic() && job.stop == StopCause::None) {
      if (auto pace = measured_steps_per_second(job))
        job.measured_speed[attempt_workers(job)] = *pace;
    }
  }
  sj.last_checkpoint = job.last_checkpoint;
  sj.attained_gpu_time = drive::attained_service(job.rec.attained_gpu_time, job.rec.started,
                                                 drive::attempt_milli(sj.worker, sj.workers), now);
  return sj;
}

void ControlPlane::account_usage(sched::Snapshot& snap) {
  const util::Duration half_life = options_.config.policy.fair.usage_half_life;
  if (half_life <= util::Duration(0)) return;
  if (!usage_) usage_.emplace(half_life);
  auto index_of = [&](const std::string& name) TY_REQUIRES(mu_) {
    auto it = std::find(usage_teams_.begin(), usage_teams_.end(), name);
    if (it != usage_teams_.end()) return static_cast<int>(it - usage_teams_.begin());
    usage_teams_.push_back(name);
    return static_cast<int>(usage_teams_.size()) - 1;
  };
  std::vector<int> of_team(snap.teams.size());
  for (size_t t = 0; t < snap.teams.size(); ++t) of_team[t] = index_of(snap.teams[t].name);
  std::vector<double> gpus(usage_teams_.size(), 0.0);
  for (const sched::SnapshotJob& sj : snap.jobs) {
    if (sj.is_running() && sj.team >= 0) {
      gpus[of_team[sj.team]] += static_cast<double>(sj.gpu_share().value()) / 1000.0;
    }
  }
  double capacity = 0;
  for (const sched::SnapshotNode& n : snap.nodes) capacity += n.gpu_count;
  usage_->advance(snap.now, gpus, capacity);
  for (size_t t = 0; t < snap.teams.size(); ++t) {
    snap.teams[t].past_usage_share = usage_->share(of_team[t]);
  }
}

void ControlPlane::apply_plan(Tx& tx) {
  std::vector<util::JobId> backing_off;
  sched::Snapshot snap = build_snapshot(backing_off);
  account_usage(snap);
  const sched::Plan plan = sched::plan(snap, options_.config.policy, ++cycle_);
#ifndef NDEBUG
  // House rule 5: in debug builds every plan is checked against the scheduler's invariants
  // (no GPU given twice, gangs whole, capacity and quotas kept), as the simulator can.
  if (auto traits = sched::find_policy(options_.config.policy.name); traits.is_ok()) {
    const util::Status ok =
        sched::check_plan(snap, plan, traits->order != sched::QueueOrderKind::DominantShare,
                          options_.config.policy.min_runtime);
    TY_CHECK_MSG(ok.is_ok(), "plan() broke an invariant: " + ok.to_string());
  }
#endif
  for (auto id : backing_off) {
    auto& job = jobs_.active().at(id);
    job.wait_reason = fmt::format("backing off after a failure; next try at {}",
                                  util::format_time(job.rec.not_before));
  }
  start_estimator_.explain(jobs_.active(), snap, plan, options_.config.policy);
  apply_preemptions(plan, tx);
  if (fleet_) apply_capacity(plan, snap, tx);
  std::vector<ActiveJob*> started;
  for (const auto& s : plan.starts) {
    ActiveJob* job = jobs_.find(s.job);
    if (job == nullptr) continue;
    start_job(*job, nodes_.to_placed(s.placement), tx);
    started.push_back(job);
  }
  if (started.empty()) return;
  (void)commit(tx);  // Placed is durable before any process exists
  for (ActiveJob* job : started) launch_started(*job, tx);
}

void ControlPlane::apply_preemptions(const sched::Plan& plan, Tx& tx) {
  for (const auto& p : plan.preemptions) {
    auto it = jobs_.active().find(p.job);
    if (it == jobs_.active().end() || it->second.stop != StopCause::None) continue;
    const int64_t grace_s = it->second.manifest.checkpoint.grace_period.count() / 1000000;
    begin_stop(it->second, StopCause::Preempt,
               p.for_job == util::kNoJob
                   ? fmt::format("preempted ({}), grace period {}s",
                                 sched::preempt_cause_name(p.cause), grace_s)
                   : fmt::format("preempted for job {} ({}), grace period {}s", p.for_job.value(),
                                 sched::preempt_cause_name(p.cause), grace_s),
               tx);
  }
}

void ControlPlane::launch_started(ActiveJob& job, Tx& tx) {
  util::Status st = launch_workers(job);
  std::string pids;
  for (const auto& w : job.workers) pids += (pids.empty() ? "" : ",") + std::to_string(w.ref.pid);
  if (executor_.launches_gangs() && !job.workers.empty())
    pids = fmt::format("in Slurm job {}", job.workers.front().ref.batch_job);
  tx.attempts.push_back({.job = job.rec.id,
                         .attempt = job.rec.attempt,
                         .started = job.rec.started,
                         .placement_json = job.rec.placement_json,
                         .processes_json = processes_json(job)});
  transition(job, model::JobState::Running,
             st.is_ok() ? fmt::format("started {} worker(s), {}{}", job.workers.size(),
                                      executor_.launches_gangs() ? "" : "pids ", pids)
                        : "could not start: " + st.message(),
             tx);
  if (st.is_ok()) return;
  // Counts as a failed attempt (retried up to backoffLimit); started ranks are stopped. A batch
  // system that refuses or cannot take the job now is not the job's failure.
  job.failure_detail = "could not be started: " + st.message();
  if (executor_.launches_gangs() && st.code() == util::StatusCode::Unavailable)
    job.launch_refused = true;
  begin_stop(job, StopCause::Failure, "worker " + job.failure_detail, tx);
}

void ControlPlane::start_job(ActiveJob& job, Placement placement, Tx& tx) {
  job.placement = std::move(placement);
  job.rec.placement_json = placement_to_json(job.placement);
  job.rec.started = clock_.now();
  job.wait_reason.clear();
  metrics_.queue_wait.observe(util::to_seconds(job.rec.started - job.rec.queued_since));
  std::string where;
  for (const Placed& a : job.placement) {
    if (a.gpu_idx < 0) continue;
    where += fmt::format("{}{}", where.empty() ? "" : ",", a.gpu_idx);
  }
  const std::string& node = nodes_.of(job.placement.front()).node.name;
  transition(job, model::JobState::Admitted,
             "admitted by the " + options_.config.policy.name + " policy", tx);
  transition(job, model::JobState::Placed,
             where.empty() ? fmt::format("placed on {} (no GPUs)", node)
                           : fmt::format("placed on {} GPUs {}", node, where),
             tx);
  tx.attempts.push_back({.job = job.rec.id,
                         .attempt = job.rec.attempt,
                         .started = job.rec.started,
                         .placement_json = job.rec.placement_json});
}

}  // namespace trainyard::server
