// The simulation loop, in phases per distinct event time:
//   1. pop every event at time t (arrivals, finishes, ends of grace periods, replans);
//   2. refresh the snapshot's time-dependent fields (attained service, remaining time);
//   3. call sched::plan() unless nothing could change (a non-preemptive policy with no free
//      GPU and no CPU-only job waiting);
//   4. apply preemption notices, then starts, each checked against the Occupancy ledger;
//   5. schedule the next time-only decision (e.g. a Tiresias demotion) and record the timeline.
#include "sim/simulator.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "sched/invariants.h"
#include "sched/policy.h"
#include "sched/queue_order.h"
#include "sched/scheduler.h"
#include "sched/snapshot_builder.h"
#include "sim/event_queue.h"
#include "sim/occupancy.h"

namespace trainyard::sim {
namespace {

using util::Duration;
using util::Time;

enum class Phase { Future, Pending, Running, Preempting, Done };

struct SimJob {
  const TraceJob* trace = nullptr;
  Phase phase = Phase::Future;
  int snap_idx = -1;
  uint32_t generation = 0;
  int attempts = 0;
  Duration saved{0};          // work safe in a checkpoint
  Duration base_attained{0};  // GPU-time of finished attempts (GPU-microseconds)
  Time attempt_start{};
  Time work_start{};  // attempt start + restart delay
  int64_t milli = 0;
  std::vector<int32_t> dependents;
  JobOutcome outcome;
};

bool cpu_only(const SimJob& j) {
  const model::WorkerRequest& w = j.trace->spec.worker;
  return w.gpus == 0 && w.gpu_milli.value() == 0 && w.mig_profile.empty();
}

class Simulation {
 public:
  Simulation(const Workload& w, const ClusterConfig& c, const SimOptions& o) : w_(w), opts_(o) {
    for (const auto& n : c.nodes) sched::add_node(snap_, n);
    for (const auto& t : c.teams) sched::add_team(snap_, t);
    for (const auto& name : w.teams) {
      if (sched::find_team(snap_, name) < 0) {
        model::Team t;
        t.name = name;
        sched::add_team(snap_, t);
      }
    }
    occupancy_.emplace(snap_);
    traits_ = *sched::find_policy(opts_.policy.name);
    jobs_.resize(w.jobs.size());
    for (size_t i = 0; i < w.jobs.size(); ++i) {
      SimJob& j = jobs_[i];
      j.trace = &w.jobs[i];
      j.milli = j.trace->spec.total_gpu_share().value();
      j.outcome.id = j.trace->id;
      j.outcome.team = sched::find_team(snap_, j.trace->spec.team);
      j.outcome.priority = j.trace->spec.priority;
      j.outcome.gpu_milli = j.milli;
      j.outcome.submit = j.trace->submit;
      j.outcome.duration = j.trace->duration;
      for (util::JobId dep : j.trace->spec.depends_on) {
        const int64_t d = dep.value() - 1;
        if (d >= 0 && d < static_cast<int64_t>(jobs_.size()) && d != static_cast<int64_t>(i)) {
          jobs_[d].dependents.push_back(static_cast<int32_t>(i));
        }
      }
      events_.push(j.trace->submit, EventKind::Arrival, static_cast<int32_t>(i), 0);
    }
  }

  util::Result<SimResult> run() {
    SimResult r;
    r.policy = opts_.policy.name;
    for (const auto& t : snap_.teams) {
      r.teams.push_back(t.name);
      r.team_weights.push_back(t.weight);
    }
    r.capacity_milli = occupancy_->capacity_milli();
    while (!events_.empty()) {
      const Time now = events_.top().time;
      allocated_gpu_us_ += static_cast<double>(occupancy_->allocated_milli()) /
                           model::kMilliPerGpu * static_cast<double>((now - last_time_).count());
      last_time_ = now;
      bool changed = false;
      while (!events_.empty() && events_.top().time == now) {
        changed |= handle(events_.pop(), now, &r);
      }
      if (changed) TY_RETURN_IF_ERROR(decide(now, &r));
      r.timeline.push_back({now, occupancy_->allocated_milli(), pending_, running_});
    }
    for (SimJob& j : jobs_) {
      if (j.phase == Phase::Done) {
        r.jobs.push_back(j.outcome);
      } else {
        ++r.unfinished;
      }
    }
    r.allocated_gpu_seconds = allocated_gpu_us_ / 1e6;
    return r;
  }

 private:
  // Returns true when the event changed what the scheduler sees.
  bool handle(const Event& e, Time now, SimResult* r) {
    ++r->events;
    if (opts_.progress && r->events % opts_.progress_every == 0) {
      opts_.progress(finished_, static_cast<int64_t>(jobs_.size()), now);
    }
    if (e.kind == EventKind::Replan) return e.generation == replan_generation_;
    SimJob& j = jobs_[e.job];
    if (e.generation != j.generation) return false;
    switch (e.kind) {
      case EventKind::Arrival:
        arrive(e.job, now);
        return true;
      case EventKind::Finish:
        if (j.phase != Phase::Running && j.phase != Phase::Preempting) return false;
        finish(e.job, now);
        return true;
      case EventKind::Stop:
        if (j.phase != Phase::Preempting) return false;
        stop(e.job, now);
        return true;
      case EventKind::Replan:
        break;
    }
    return false;
  }

  void arrive(int32_t idx, Time now) {
    SimJob& j = jobs_[idx];
    j.phase = Phase::Pending;
    j.snap_idx = static_cast<int>(snap_.jobs.size());
    sched::SnapshotJob sj = sched::make_pending_job(snap_, j.trace->id, j.trace->spec, now);
    sj.remaining = j.trace->duration;
    sj.waiting_on = first_unfinished_dependency(idx);
    snap_.jobs.push_back(std::move(sj));
    if (opts_.keep_arrival_order)
      snap_.arrival_order.push_back(j.snap_idx);  // in (submit, id) order
    index_of_id_.push_back(idx);
    ++pending_;
    if (cpu_only(j)) {
      ++cpu_only_pending_;
    }
  }

  util::JobId first_unfinished_dependency(int32_t idx) const {
    for (util::JobId dep : jobs_[idx].trace->spec.depends_on) {
      const int64_t d = dep.value() - 1;
      if (d >= 0 && d < static_cast<int64_t>(jobs_.size()) && jobs_[d].phase != Phase::Done)
        return dep;
    }
    return util::kNoJob;
  }

  Duration progress(const SimJob& j, Time now) const {
    return j.saved + std::max(Duration(0), now - j.work_start);
  }

  Duration attained(const SimJob& j, Time now) const {
    return j.base_attained + (now - j.attempt_start) * j.milli / model::kMilliPerGpu;
  }

  void leave_gpus(SimJob& j, Time now) {
    sched::SnapshotJob& sj = snap_.jobs[j.snap_idx];
    occupancy_->give_back(sj, sj.placement);
    j.base_attained = attained(j, now);
    --running_;
  }

  void finish(int32_t idx, Time now) {
    SimJob& j = jobs_[idx];
    leave_gpus(j, now);
    j.phase = Phase::Done;
    j.outcome.finish = now;
    ++finished_;
    remove_from_snapshot(j);
    for (int32_t d : j.dependents) {
      if (jobs_[d].phase == Phase::Pending)
        snap_.jobs[jobs_[d].snap_idx].waiting_on = first_unfinished_dependency(d);
    }
  }

  void stop(int32_t idx, Time now) {
    SimJob& j = jobs_[idx];
    const Duration useful = std::max(Duration(0), now - j.work_start);
    const Duration interval = j.trace->spec.checkpoint_interval;
    const Duration kept = interval.count() > 0 ? (useful / interval) * interval : Duration(0);
    j.saved += kept;
    j.outcome.lost_work += useful - kept;
    ++j.outcome.preemptions;
    leave_gpus(j, now);
    ++j.generation;  // the scheduled Finish no longer applies
    j.phase = Phase::Pending;
    ++pending_;
    sched::SnapshotJob& sj = snap_.jobs[j.snap_idx];
    sj.phase = sched::JobPhase::Pending;
    sj.placement.clear();
    sj.queued_since = now;
    sj.last_run = now - j.attempt_start;
    sj.attained_gpu_time = j.base_attained;
    sj.remaining = j.trace->duration - j.saved;
  }

  void remove_from_snapshot(SimJob& j) {
    const int at = j.snap_idx;
    const int last = static_cast<int>(snap_.jobs.size()) - 1;
    if (opts_.keep_arrival_order) {
      auto& order = snap_.arrival_order;
      order.erase(std::find(order.begin(), order.end(), at));
      if (at != last) *std::find(order.begin(), order.end(), last) = at;
    }
    if (at != last) {
      snap_.jobs[at] = std::move(snap_.jobs[last]);
      index_of_id_[at] = index_of_id_[last];
      jobs_[index_of_id_[at]].snap_idx = at;
    }
    snap_.jobs.pop_back();
    index_of_id_.pop_back();
    j.snap_idx = -1;
  }

  void refresh_snapshot(Time now) {
    snap_.now = now;
    for (size_t s = 0; s < snap_.jobs.size(); ++s) {
      sched::SnapshotJob& sj = snap_.jobs[s];
      if (!sj.is_running()) continue;
      const SimJob& j = jobs_[index_of_id_[s]];
      sj.attained_gpu_time = attained(j, now);
      sj.remaining = j.trace->duration - std::min(j.trace->duration, progress(j, now));
    }
  }

  util::Status decide(Time now, SimResult* r) {
    const bool preemptive = traits_.victims != sched::VictimRule::None;
    if (!preemptive && occupancy_->free_milli() == 0 && cpu_only_pending_ == 0)
      return util::Status::ok();
    if (pending_ == 0) return util::Status::ok();
    refresh_snapshot(now);
    const sched::Plan plan = sched::plan(snap_, opts_.policy, opts_.seed);
    ++r->plan_calls;
    if (opts_.full_invariant_check) {
      TY_RETURN_IF_ERROR(
          sched::check_plan(snap_, plan, traits_.order != sched::QueueOrderKind::DominantShare)
              .with_context(fmt::format("after plan() at t={}s", util::to_seconds(now))));
    }
    for (const auto& p : plan.preemptions) notice(p.job, now);
    for (const auto& s : plan.starts) TY_RETURN_IF_ERROR(start(s, now));
    if (auto next = sched::next_decision_time(snap_, opts_.policy)) {
      events_.push(*next, EventKind::Replan, -1, ++replan_generation_);
    }
    return util::Status::ok();
  }

  SimJob& by_id(util::JobId id) { return jobs_[id.value() - 1]; }

  void notice(util::JobId id, Time now) {
    SimJob& j = by_id(id);
    TY_CHECK(j.phase == Phase::Running);
    j.phase = Phase::Preempting;
    snap_.jobs[j.snap_idx].phase = sched::JobPhase::Preempting;
    events_.push(now + opts_.grace_period, EventKind::Stop, static_cast<int32_t>(id.value() - 1),
                 j.generation);
  }

  util::Status start(const sched::StartAction& s, Time now) {
    SimJob& j = by_id(s.job);
    TY_CHECK(j.phase == Phase::Pending);
    sched::SnapshotJob& sj = snap_.jobs[j.snap_idx];
    TY_RETURN_IF_ERROR(occupancy_->take(sj, s.placement));
    sj.phase = sched::JobPhase::Running;
    sj.placement = s.placement;
    sj.started = now;
    if (j.attempts == 0) j.outcome.first_start = now;
    const Duration delay = j.attempts > 0 ? opts_.restart_delay : Duration(0);
    j.outcome.restart_overhead += delay;
    ++j.attempts;
    j.attempt_start = now;
    j.work_start = now + delay;
    j.phase = Phase::Running;
    --pending_;
    ++running_;
    if (cpu_only(j)) {
      --cpu_only_pending_;
    }
    events_.push(j.work_start + (j.trace->duration - j.saved), EventKind::Finish,
                 static_cast<int32_t>(s.job.value() - 1), j.generation);
    return util::Status::ok();
  }

  const Workload& w_;
  const SimOptions& opts_;
  sched::Snapshot snap_;
  std::optional<Occupancy> occupancy_;
  sched::PolicyTraits traits_{};
  std::vector<SimJob> jobs_;
  std::vector<int32_t> index_of_id_;  // snapshot position -> job index
  EventQueue events_;
  int32_t pending_ = 0;
  int32_t running_ = 0;
  int32_t cpu_only_pending_ = 0;
  int64_t finished_ = 0;
  uint32_t replan_generation_ = 0;
  Time last_time_{};
  double allocated_gpu_us_ = 0;
};

}  // namespace

util::Result<SimResult> simulate(const Workload& workload, const ClusterConfig& cluster,
                                 const SimOptions& opts) {
  auto traits = sched::find_policy(opts.policy.name);
  if (!traits.is_ok()) return traits.status();
  const Duration t0 = util::WallClock::steady_now();
  Simulation sim(workload, cluster, opts);
  auto r = sim.run();
  if (r.is_ok()) r->wall_seconds = util::to_seconds(util::WallClock::steady_now() - t0);
  return r;
}

}  // namespace trainyard::sim
