// The simulation loop, in phases per distinct event time:
//   1. pop every event at time t (arrivals, finishes, ends of grace periods, replans);
//   2. refresh the snapshot's time-dependent fields (attained service, remaining time);
//   3. call sched::plan() unless nothing could change (a non-preemptive policy with no free
//      GPU and no CPU-only job waiting);
//   4. apply preemption notices, then starts, each checked against the Occupancy ledger;
//   5. schedule the next time-only decision (e.g. a Tiresias demotion) and record the timeline.
#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "drive/cost_share.h"
#include "drive/job_history.h"
#include "sched/decayed_usage.h"
#include "sched/invariants.h"
#include "sched/plan.h"
#include "sched/policy.h"
#include "sched/queue_order.h"
#include "sched/snapshot_builder.h"
#include "sim/event_queue.h"
#include "sim/fleet.h"
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
  // Checkpoints of the current attempt: every `interval` of work, each stalling `stall` (so
  // the attempt runs (interval + stall) / interval slower); 0 = none.
  Duration interval{0};
  Duration stall{0};
  // Work done per second of run time in this attempt: 1 at the configuration the trace
  // measured; the job's speed model (TraceJob::scaling) says how its placement changes it.
  double speed = 1.0;
  // When the speed changes within the attempt (a job whose statistical efficiency changes by
  // epoch): (work position where a stretch ends, its speed), from `saved` on; overrides `speed`.
  std::vector<std::pair<Duration, double>> pace;
  bool noticed = false;      // the pending stop came with a notice (it can save a checkpoint)
  bool interrupted = false;  // the pending stop is a reclaim of one of its nodes
  bool restart_after_interruption = false;   // the last stop was a reclaim
  std::optional<sched::WaitCode> last_wait;  // from the latest plan() that left it pending
};

bool cpu_only(const SimJob& j) {
  const model::WorkerRequest& w = j.trace->spec.worker;
  return w.gpus == 0 && w.gpu_milli.value() == 0 && w.mig_profile.empty();
}

class Simulation {
 public:
  Simulation(const Workload& w, const ClusterConfig& c, const SimOptions& o) : w_(w), opts_(o) {
    if (!opts_.cloud) {
      for (const auto& n : c.nodes) sched::add_node(snap_, n);
    }
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
    Duration longest{0};
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
      last_arrival_ = std::max(last_arrival_, j.trace->submit);
      longest = std::max(longest, j.trace->duration);
    }
    stops_since_progress_.assign(jobs_.size(), 0);
    if (opts_.policy.fair.usage_half_life > Duration(0)) {
      usage_.emplace(opts_.policy.fair.usage_half_life);
    }
    stall_limit_ =
        opts_.stall_limit > Duration(0) ? opts_.stall_limit : 2 * longest + util::seconds(86400);
  }

  util::Status init() {
    if (!opts_.cloud) return util::Status::ok();
    auto f = Fleet::create(*opts_.cloud, snap_, *occupancy_);
    if (!f.is_ok()) return f.status();
    fleet_ = std::move(*f);
    node_jobs_.clear();
    events_.push(Time{}, EventKind::Wake, -1, 0);  // pools with minNodes buy at once
    return util::Status::ok();
  }

  util::Result<SimResult> run() {
    SimResult r;
    r.policy = opts_.policy.name;
    for (const auto& t : snap_.teams) {
      r.teams.push_back(t.name);
      r.team_weights.push_back(t.weight);
    }
    r.capacity_milli = occupancy_->capacity_milli();
    Time now = last_time_;
    Time previous = Time::min();
    int64_t rounds_at_now = 0;
    while (!events_.empty()) {
      now = events_.top().time;
      if (fleet_ && now > last_arrival_ + opts_.cloud_horizon) {
        r.stopped_at_horizon = true;
        break;
      }
      rounds_at_now = now == previous ? rounds_at_now + 1 : 0;
      previous = now;
      TY_RETURN_IF_ERROR(watchdog(now, rounds_at_now));
      advance_to(now);
      TY_ASSIGN_OR_RETURN(const bool changed, handle_events_at(now, &r));
      if (changed) TY_RETURN_IF_ERROR(decide(now, &r));
      record_timeline(now, &r);
      if (fleet_ && finished_ == static_cast<int64_t>(jobs_.size())) break;
    }
    TY_RETURN_IF_ERROR(close_books(now, &r));
    return r;
  }

 private:
  // Accrues GPU-time allocated and the fleet's bill up to `now`.
  void advance_to(Time now) {
    const double dt = static_cast<double>((now - last_time_).count());
    allocated_gpu_us_ +=
        static_cast<double>(occupancy_->allocated_milli()) / model::kMilliPerGpu * dt;
    if (fleet_) cost_usd_ += fleet_->usd_per_hour() * dt / 3.6e9;
    last_time_ = now;
    if (usage_) account_usage(now);
  }

  // Every event at `now`, including the fleet's and those they cause at the same time; whether
  // any changed what the scheduler should look at.
  util::Result<bool> handle_events_at(Time now, SimResult* r) {
    bool changed = false;
    do {
      while (!events_.empty() && events_.top().time == now) {
        changed |= handle(events_.pop(), now, r);
      }
      if (fleet_) {
        TY_ASSIGN_OR_RETURN(const bool fleet_changed, poll_fleet(now));
        changed |= fleet_changed;
      }
    } while (!events_.empty() && events_.top().time == now);
    return changed;
  }

  void record_timeline(Time now, SimResult* r) {
    TimelinePoint p{now, occupancy_->allocated_milli(), pending_, running_};
    if (fleet_) {
      p.nodes = fleet_->nodes_up();
      p.fleet_gpus = fleet_->gpus_up();
      p.cost_usd = cost_usd_;
      r->peak_nodes = std::max(r->peak_nodes, p.nodes);
      r->capacity_milli =
          std::max<int64_t>(r->capacity_milli, int64_t{p.fleet_gpus} * model::kMilliPerGpu);
    }
    r->timeline.push_back(p);
  }

  // The fleet's bill closed and checked, and every job's outcome (or why it did not finish).
  util::Status close_books(Time now, SimResult* r) {
    if (fleet_) {
      fleet_->close(now);
      r->cost = fleet_->ledger().report();
      TY_RETURN_IF_ERROR(fleet_->ledger().check_balanced());
      r->interruptions = fleet_->interruptions();
      r->billed_gpu_hours = r->cost->total.gpu_hours;
    }
    for (SimJob& j : jobs_) {
      r->interrupted_stops += j.outcome.interruptions;
      r->interruption_lost_work += j.outcome.interruption_lost_work;
      r->interruption_restart += j.outcome.interruption_restart;
      if (j.phase == Phase::Done) {
        r->jobs.push_back(j.outcome);
      } else {
        ++r->unfinished;
        ++r->unfinished_by_reason[unfinished_reason(j)];
      }
    }
    r->allocated_gpu_seconds = allocated_gpu_us_ / 1e6;
    return util::Status::ok();
  }

  static std::string unfinished_reason(const SimJob& j) {
    switch (j.phase) {
      case Phase::Running:
      case Phase::Preempting:
        return "running";
      case Phase::Future:
        return "not arrived";
      case Phase::Pending:
      case Phase::Done:
        break;
    }
    return j.last_wait ? std::string(sched::wait_code_name(*j.last_wait)) : "pending";
  }

  // Fair share with decay: the GPUs each team held since the previous event time.
  void account_usage(Time now) {
    std::vector<double> gpus(snap_.teams.size(), 0.0);
    for (const sched::SnapshotJob& sj : snap_.jobs) {
      if (sj.is_running() && sj.team >= 0) {
        gpus[sj.team] += static_cast<double>(sj.gpu_share().value()) / model::kMilliPerGpu;
      }
    }
    const double capacity =
        fleet_ ? static_cast<double>(fleet_->gpus_up())
               : static_cast<double>(occupancy_->capacity_milli()) / model::kMilliPerGpu;
    usage_->advance(now, gpus, capacity);
    for (size_t t = 0; t < snap_.teams.size(); ++t) {
      snap_.teams[t].past_usage_share = usage_->share(static_cast<int>(t));
    }
  }

  // Progress is a job finishing or saving a checkpoint; a healthy run makes some within the
  // longest job's duration (twice that, plus a day, leaves room for queueing and restarts).
  void progressed(Time now) {
    last_progress_ = now;
    for (int32_t idx : stopped_) stops_since_progress_[idx] = 0;
    stopped_.clear();
  }

  util::Status watchdog(Time now, int64_t rounds_at_now) {
    if (rounds_at_now >= opts_.same_time_limit) {
      return util::internal_error(fmt::format(
          "the simulated clock stopped at t={:.0f}s: {} scheduling rounds passed without time "
          "moving; {}. This is a scheduler bug: please report it with the trace and the policy",
          util::to_seconds(now - Time{}), rounds_at_now, culprits()));
    }
    // Cloud runs end at their horizon: a job restarted from scratch by spot reclaims may never
    // finish, and that is what those scenarios measure.
    if (fleet_ || finished_ == static_cast<int64_t>(jobs_.size())) return util::Status::ok();
    const Time since = std::max(last_progress_, std::min(now, last_arrival_));
    if (now - since <= stall_limit_) return util::Status::ok();
    const bool preempted = !stopped_.empty();
    return util::internal_error(fmt::format(
        "no job finished or saved a checkpoint for {:.1f} simulated days (since t={:.0f}s), so "
        "the run cannot end; {}. {}",
        util::to_seconds(now - since) / 86400.0, util::to_seconds(since - Time{}), culprits(),
        preempted ? fmt::format("Jobs preempted again and again before they checkpoint point to "
                                "a preemption cycle in policy '{}' (try --min-runtime, or "
                                "--checkpoint-interval below it)",
                                opts_.policy.name)
                  : std::string("No job was preempted since then: the jobs left wait for "
                                "capacity that does not come free, or run longer than the "
                                "watchdog's limit")));
  }

  // The jobs preempted most since the last progress, or the pending and running ones.
  std::string culprits() const {
    std::vector<int32_t> idx = stopped_;
    std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
      return std::pair(-stops_since_progress_[a], a) < std::pair(-stops_since_progress_[b], b);
    });
    std::string out;
    for (size_t k = 0; k < idx.size() && k < 5; ++k) {
      const SimJob& j = jobs_[idx[k]];
      out += fmt::format("{}job {} ({:.3g} GPUs, preempted {} times)", k ? ", " : "",
                         j.trace->id.value(), static_cast<double>(j.milli) / model::kMilliPerGpu,
                         stops_since_progress_[idx[k]]);
    }
    if (!out.empty()) return "jobs preempted since then: " + out;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      const SimJob& j = jobs_[i];
      if (j.phase == Phase::Done) continue;
      static constexpr const char* kPhase[] = {"not arrived", "pending", "running", "preempting",
                                               "done"};
      out += fmt::format("{}job {} ({})", out.empty() ? "" : ", ", j.trace->id.value(),
                         kPhase[static_cast<int>(j.phase)]);
      if (out.size() > 200) break;
    }
    return out.empty() ? "every job is done" : "unfinished jobs: " + out;
  }

  // Returns true when the event changed what the scheduler sees.
  bool handle(const Event& e, Time now, SimResult* r) {
    ++r->events;
    if (opts_.progress && r->events % opts_.progress_every == 0) {
      opts_.progress(finished_, static_cast<int64_t>(jobs_.size()), now);
    }
    if (e.kind == EventKind::Replan) return e.generation == replan_generation_;
    if (e.kind == EventKind::Wake) return true;
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
      case EventKind::Wake:
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
    sj.scaling = j.trace->scaling.get();
    if (fleet_ && fleet_->all_preemptible()) sj.preemptible = true;
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

  // Run time of the attempt so far: wall time since work started, less checkpoint stalls.
  static Duration run_in_attempt(const SimJob& j, Time now) {
    const Duration wall = std::max(Duration(0), now - j.work_start);
    if (j.interval.count() <= 0 || j.stall.count() <= 0) return wall;
    return Duration(static_cast<int64_t>(static_cast<double>(wall.count()) *
                                         static_cast<double>(j.interval.count()) /
                                         static_cast<double>((j.interval + j.stall).count())));
  }
  // Work done in the attempt so far (at the trace's configuration's pace).
  static Duration work_in_attempt(const SimJob& j, Time now) {
    return as_work(j, run_in_attempt(j, now));
  }
  static Duration as_work(const SimJob& j, Duration run) {
    if (!j.pace.empty()) {
      double pos = static_cast<double>(j.saved.count());
      double left = static_cast<double>(run.count());
      for (const auto& [end, speed] : j.pace) {
        const double stretch = static_cast<double>(end.count()) - pos;
        if (stretch <= 0) continue;
        if (left * speed <= stretch) {
          pos += left * speed;
          left = 0;
          break;
        }
        left -= stretch / speed;
        pos += stretch;
      }
      return Duration(static_cast<int64_t>(pos)) - j.saved;
    }
    if (j.speed == 1.0) return run;
    return Duration(static_cast<int64_t>(static_cast<double>(run.count()) * j.speed));
  }
  // Run time the attempt needs for `work` from its start.
  static double run_for_work(const SimJob& j, Duration work) {
    if (j.pace.empty()) {
      const double run = static_cast<double>(work.count());
      return j.speed != 1.0 ? std::ceil(run / j.speed) : run;
    }
    double pos = static_cast<double>(j.saved.count());
    const double target = static_cast<double>((j.saved + work).count());
    double run = 0;
    for (const auto& [end, speed] : j.pace) {
      const double upto = std::min(target, static_cast<double>(end.count()));
      if (upto > pos) {
        run += (upto - pos) / speed;
        pos = upto;
      }
      if (pos >= target) break;
    }
    return std::ceil(run);
  }
  // Wall time the attempt needs for `work`, with its checkpoint stalls.
  static Duration wall_for_work(const SimJob& j, Duration work) {
    const double run = run_for_work(j, work);
    if (j.interval.count() <= 0 || j.stall.count() <= 0) return Duration(static_cast<int64_t>(run));
    return Duration(
        static_cast<int64_t>(std::ceil(run * static_cast<double>((j.interval + j.stall).count()) /
                                       static_cast<double>(j.interval.count()))));
  }

  Duration progress(const SimJob& j, Time now) const { return j.saved + work_in_attempt(j, now); }

  Duration attained(const SimJob& j, Time now) const {
    return drive::attained_service(j.base_attained, j.attempt_start, j.milli, now);
  }

  void leave_gpus(SimJob& j, Time now) {
    sched::SnapshotJob& sj = snap_.jobs[j.snap_idx];
    occupancy_->give_back(sj, sj.placement);
    if (fleet_) hold(j, sj.placement, -1, now);
    j.base_attained = attained(j, now);
    --running_;
  }

  void finish(int32_t idx, Time now) {
    SimJob& j = jobs_[idx];
    leave_gpus(j, now);
    j.phase = Phase::Done;
    j.outcome.finish = now;
    ++finished_;
    progressed(now);
    remove_from_snapshot(j);
    for (int32_t d : j.dependents) {
      if (jobs_[d].phase == Phase::Pending)
        snap_.jobs[jobs_[d].snap_idx].waiting_on = first_unfinished_dependency(d);
    }
  }

  void stop(int32_t idx, Time now) {
    SimJob& j = jobs_[idx];
    const Duration useful = run_in_attempt(j, now);  // run time; lost work is counted in it
    const Duration interval = j.interval;
    const Duration kept = opts_.save_on_notice && j.noticed ? useful
                          : interval.count() > 0            ? (useful / interval) * interval
                                                            : Duration(0);
    j.noticed = false;
    j.saved = std::min(j.trace->duration, j.saved + as_work(j, kept));
    if (kept > Duration(0)) progressed(now);
    if (stops_since_progress_[idx]++ == 0) stopped_.push_back(idx);
    j.outcome.lost_work += useful - kept;
    ++j.outcome.preemptions;
    if (j.interrupted) {
      ++j.outcome.interruptions;
      j.outcome.interruption_lost_work += useful - kept;
    }
    j.restart_after_interruption = j.interrupted;
    if (fleet_) record_lost(j, useful - kept, now);
    j.interrupted = false;
    leave_gpus(j, now);
    ++j.generation;  // the scheduled Finish no longer applies
    j.phase = Phase::Pending;
    ++pending_;
    sched::SnapshotJob& sj = snap_.jobs[j.snap_idx];
    sj.phase = sched::JobPhase::Pending;
    sj.placement.clear();
    sj.workers = j.trace->spec.workers;  // an elastic job waits for its requested size
    j.milli = j.trace->spec.total_gpu_share().value();
    sj.queued_since = now;
    sj.last_run = drive::attempt_length(j.attempt_start, now);
    sj.attained_gpu_time = j.base_attained;
    sj.remaining = drive::remaining(j.trace->duration, j.saved);
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
      sj.remaining = drive::remaining(j.trace->duration, progress(j, now));
    }
  }

  util::Status decide(Time now, SimResult* r) {
    const bool preemptive = traits_.victims != sched::VictimRule::None;
    if (!fleet_ && !preemptive && occupancy_->free_milli() == 0 && cpu_only_pending_ == 0)
      return util::Status::ok();
    // Goodput also grows running elastic jobs into GPUs that others left.
    const bool reallocates = traits_.victims == sched::VictimRule::Reallocate;
    if (pending_ == 0 && !fleet_ && !(reallocates && running_ > 0 && occupancy_->free_milli() > 0))
      return util::Status::ok();
    refresh_snapshot(now);
    const sched::Plan plan = sched::plan(snap_, opts_.policy, opts_.seed);
    ++r->plan_calls;
    if (opts_.full_invariant_check) {
      TY_RETURN_IF_ERROR(
          sched::check_plan(snap_, plan, traits_.order != sched::QueueOrderKind::DominantShare,
                            opts_.policy.min_runtime)
              .with_context(fmt::format("after plan() at t={}s", util::to_seconds(now))));
    }
    for (const auto& w : plan.waiting) by_id(w.job).last_wait = w.code;
    for (const auto& p : plan.preemptions) notice(p.job, now);
    for (const auto& s : plan.starts) TY_RETURN_IF_ERROR(start(s, now));
    if (fleet_) {
      for (const auto& rel : plan.releases) snap_.nodes[rel.node_idx].schedulable = false;
      const int64_t refused = fleet_->refusals();
      TY_RETURN_IF_ERROR(fleet_->apply(plan, now));
      auto c = poll_fleet(now);  // releases and refusals take effect at once
      if (!c.is_ok()) return c.status();
      // A request refused at once closed a zone or pool: plan again now, so the autoscaler
      // turns to another (each refusal closes one, so this ends).
      if (fleet_->refusals() != refused) events_.push(now, EventKind::Wake, -1, 0);
      wake_at_next_cloud_event(now);
    }
    std::optional<Time> next = sched::next_decision_time(snap_, opts_.policy);
    // Jobs left for a later plan by the cap on victim searches: plan again a second later.
    if (plan.victim_searches_capped && (!next || *next > now + util::seconds(1))) {
      next = now + util::seconds(1);
    }
    if (next) events_.push(*next, EventKind::Replan, -1, ++replan_generation_);
    return util::Status::ok();
  }

  SimJob& by_id(util::JobId id) { return jobs_[id.value() - 1]; }

  void notice(util::JobId id, Time now) { notice_until(by_id(id), now + opts_.grace_period); }

  void notice_until(SimJob& j, Time deadline) {
    TY_CHECK(j.phase == Phase::Running || j.phase == Phase::Preempting);
    j.phase = Phase::Preempting;
    j.noticed = true;
    snap_.jobs[j.snap_idx].phase = sched::JobPhase::Preempting;
    events_.push(deadline, EventKind::Stop, static_cast<int32_t>(j.trace->id.value() - 1),
                 j.generation);
  }

  // Cloud events up to now. A reclaimed node's jobs get the provider's deadline as their grace
  // period; with no time left they stop at once, before the node goes.
  util::Result<bool> poll_fleet(Time now) {
    auto changed = fleet_->poll(now, [&](const FleetNotice& n) { on_reclaim(n, now); });
    if (!changed.is_ok()) return changed.status();
    return *changed;
  }

  void on_reclaim(const FleetNotice& n, Time now) {
    if (static_cast<size_t>(n.node_idx) >= node_jobs_.size()) return;
    const auto holders = node_jobs_[n.node_idx];  // stop() edits the list
    for (const auto& [idx, milli] : holders) {
      SimJob& j = jobs_[idx];
      if (j.phase != Phase::Running && j.phase != Phase::Preempting) continue;
      j.interrupted = true;
      if (n.deadline <= now) {
        stop(idx, now);
      } else {
        notice_until(j, n.deadline);
      }
    }
  }

  // The provider's next event, or sooner a pool refused for lack of capacity reopening while
  // jobs wait: without that wake a run whose requests were all refused would end there, with
  // its jobs unfinished long before the horizon.
  void wake_at_next_cloud_event(Time now) {
    const auto next = fleet_->next_wake(now, pending_ > 0);
    if (!next) return;
    if (next_wake_ > now && next_wake_ <= *next) return;  // an earlier wake is queued
    next_wake_ = *next;
    events_.push(*next, EventKind::Wake, -1, 0);
  }

  // Adds (sign +1) or removes (-1) the job's share of each node it is placed on, and re-splits
  // those nodes' cost in the ledger.
  void hold(const SimJob& j, const std::vector<sched::Assignment>& placement, int sign, Time now) {
    const int32_t idx = static_cast<int32_t>(j.trace->id.value() - 1);
    std::vector<int> touched;
    for (const auto& a : placement) {
      if (static_cast<size_t>(a.node_idx) >= node_jobs_.size()) node_jobs_.resize(a.node_idx + 1);
      auto& list = node_jobs_[a.node_idx];
      const int64_t milli = drive::held_milli(snap_, a);
      auto it =
          std::find_if(list.begin(), list.end(), [&](const auto& p) { return p.first == idx; });
      if (sign > 0) {
        if (it == list.end()) {
          list.emplace_back(idx, milli);
        } else {
          it->second += milli;
        }
      } else if (it != list.end()) {
        it->second -= milli;
        if (it->second <= 0) list.erase(it);
      }
      if (std::find(touched.begin(), touched.end(), a.node_idx) == touched.end())
        touched.push_back(a.node_idx);
    }
    for (int node : touched) {
      std::vector<cloud::CostShare> shares;
      for (const auto& [jid, milli] : node_jobs_[node]) {
        shares.push_back({.job = std::to_string(jobs_[jid].trace->id.value()),
                          .team = team_name(jobs_[jid]),
                          .gpu_milli = milli});
      }
      if (auto idle_end = fleet_->set_holders(node, std::move(shares), now)) {
        events_.push(*idle_end, EventKind::Wake, -1, 0);
      }
    }
  }

  void record_lost(const SimJob& j, Duration lost, Time now) {
    if (lost <= Duration(0)) return;
    const auto& placement = snap_.jobs[j.snap_idx].placement;
    std::vector<std::pair<int, int64_t>> per_node;
    for (const auto& a : placement) {
      const int64_t milli = drive::held_milli(snap_, a);
      auto it = std::find_if(per_node.begin(), per_node.end(),
                             [&](const auto& p) { return p.first == a.node_idx; });
      if (it == per_node.end()) {
        per_node.emplace_back(a.node_idx, milli);
      } else {
        it->second += milli;
      }
    }
    for (const auto& [node, milli] : per_node) {
      fleet_->record_lost_work(node, std::to_string(j.trace->id.value()), team_name(j), milli, lost,
                               now, j.interrupted);
    }
  }

  std::string team_name(const SimJob& j) const {
    return j.outcome.team >= 0 ? snap_.teams[j.outcome.team].name : std::string("-");
  }

  util::Status start(const sched::StartAction& s, Time now) {
    SimJob& j = by_id(s.job);
    TY_CHECK(j.phase == Phase::Pending);
    sched::SnapshotJob& sj = snap_.jobs[j.snap_idx];
    if (s.workers > 0) {
      if (!j.trace->spec.elastic() || s.workers < sj.min_workers || s.workers > sj.max_workers) {
        return util::internal_error(fmt::format(
            "job {}: started with {} workers, outside its range", s.job.value(), s.workers));
      }
      sj.workers = s.workers;
      j.milli = drive::attempt_milli(sj.worker, s.workers);
    }
    TY_RETURN_IF_ERROR(occupancy_->take(sj, s.placement));
    sj.phase = sched::JobPhase::Running;
    sj.placement = s.placement;
    sj.started = now;
    if (j.attempts == 0) j.outcome.first_start = now;
    const Duration delay = j.attempts > 0 ? opts_.restart_delay : Duration(0);
    j.outcome.restart_overhead += delay;
    if (j.restart_after_interruption) j.outcome.interruption_restart += delay;
    j.last_wait.reset();
    ++j.attempts;
    j.attempt_start = now;
    j.work_start = now + delay;
    j.interval = j.trace->spec.checkpoint_interval;
    j.stall = Duration(0);
    set_pace(j, s);
    if (opts_.full_invariant_check) TY_RETURN_IF_ERROR(check_pace(j));
    if (fleet_ && !s.placement.empty()) {
      std::vector<int> nodes;
      for (const auto& a : s.placement) {
        if (std::find(nodes.begin(), nodes.end(), a.node_idx) == nodes.end())
          nodes.push_back(a.node_idx);
      }
      j.interval = fleet_->checkpoint_interval(s.placement.front().node_idx,
                                               static_cast<int>(nodes.size()), j.interval);
      if (j.interval.count() > 0) j.stall = fleet_->checkpoint_cost();
      hold(j, s.placement, +1, now);
    }
    j.phase = Phase::Running;
    --pending_;
    ++running_;
    if (cpu_only(j)) {
      --cpu_only_pending_;
    }
    events_.push(j.work_start + wall_for_work(j, j.trace->duration - j.saved), EventKind::Finish,
                 static_cast<int32_t>(s.job.value() - 1), j.generation);
    return util::Status::ok();
  }

  // The job's speed on this start's placement and batch: its speed model's, the slowest GPU
  // of the gang setting the pace; without one, proportional to the workers for an elastic job
  // (the trace's duration is at its requested workers) and 1 for a rigid one. A job given a
  // batch by the plan adapts it (AdaptDL): with per-epoch statistics its pace changes epoch by
  // epoch, the batch chosen anew at each.
  void set_pace(SimJob& j, const sched::StartAction& s) const {
    j.pace.clear();
    j.speed = 1.0;
    const model::JobSpec& spec = j.trace->spec;
    const model::ScalingModel* m = j.trace->scaling.get();
    if (m == nullptr) {
      if (spec.elastic() && s.workers > 0)
        j.speed = static_cast<double>(s.workers) / std::max(1, spec.workers);
      return;
    }
    const Allocation a = allocation(m, s);
    if (a.gpus == 0) return;
    if (s.batch <= 0 || !m->has_epochs()) {
      const double batch = s.batch > 0 ? s.batch : m->batch;
      j.speed = m->speed(a.gpus, a.nodes, batch, a.compute);
      return;
    }
    const double total = static_cast<double>(j.trace->duration.count());
    const double done = total > 0 ? static_cast<double>(j.saved.count()) / total : 0;
    for (const model::PaceStretch& p : m->pace(done, a.gpus, a.nodes, a.compute, true)) {
      const Duration end(static_cast<int64_t>(std::llround(p.work_end * total)));
      j.pace.emplace_back(std::min(end, j.trace->duration), std::max(p.speed, 1e-9));
    }
    if (j.pace.empty()) return;
    j.pace.back().first = j.trace->duration;
    j.speed = j.pace.front().second;
  }

  // The run time the attempt needs for its remaining work does that work (the two directions
  // of the pace agree, to rounding).
  static util::Status check_pace(const SimJob& j) {
    const Duration left = j.trace->duration - j.saved;
    const Duration run(static_cast<int64_t>(run_for_work(j, left)));
    const Duration done = as_work(j, run);
    double fastest = j.speed;
    for (const auto& p : j.pace) fastest = std::max(fastest, p.second);
    const int64_t slack = 2 + static_cast<int64_t>(std::ceil(fastest));
    if (std::llabs((done - left).count()) > slack) {
      return util::internal_error(
          fmt::format("job {}: its pace does {} us of work in the {} us it needs for {} us",
                      j.trace->id.value(), done.count(), run.count(), left.count()));
    }
    return util::Status::ok();
  }

  struct Allocation {
    int gpus = 0;
    int nodes = 0;
    double compute = 1.0;
  };
  Allocation allocation(const model::ScalingModel* m, const sched::StartAction& s) const {
    int gpus = 0;
    std::vector<int> nodes;
    double compute = std::numeric_limits<double>::infinity();
    for (const auto& a : s.placement) {
      if (a.gpu_idx < 0) continue;
      ++gpus;
      if (std::find(nodes.begin(), nodes.end(), a.node_idx) != nodes.end()) continue;
      nodes.push_back(a.node_idx);
      const int model = snap_.nodes[a.node_idx].gpu_model;
      compute = std::min(compute,
                         model::gpu_compute_speed(model >= 0 ? snap_.accelerators[model] : nullptr,
                                                  m->reference_bandwidth_gbps));
    }
    if (gpus == 0) return {};
    return {gpus, static_cast<int>(nodes.size()), compute};
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
  // Cloud runs.
  std::unique_ptr<Fleet> fleet_;
  std::vector<std::vector<std::pair<int32_t, int64_t>>> node_jobs_;  // node -> (job, milli)
  Time last_arrival_{};
  Time next_wake_{};
  std::optional<sched::DecayedUsage> usage_;  // when FairConfig::usage_half_life > 0
  // Watchdog.
  Duration stall_limit_{0};
  Time last_progress_{};
  std::vector<int32_t> stops_since_progress_;  // per job
  std::vector<int32_t> stopped_;               // jobs with a non-zero count
  double cost_usd_ = 0;
};

}  // namespace

util::Result<SimResult> simulate(const Workload& workload, const ClusterConfig& cluster,
                                 const SimOptions& opts) {
  auto traits = sched::find_policy(opts.policy.name);
  if (!traits.is_ok()) return traits.status();
  const Duration t0 = util::WallClock::steady_now();
  Simulation sim(workload, cluster, opts);
  TY_RETURN_IF_ERROR(sim.init());
  auto r = sim.run();
  if (r.is_ok()) r->wall_seconds = util::to_seconds(util::WallClock::steady_now() - t0);
  return r;
}

}  // namespace trainyard::sim
