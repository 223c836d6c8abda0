// Victim selection: remove the least valuable eligible running jobs one at a time until the
// pending job fits, then give back (reprieve) every victim not needed, most valuable first,
// as the Kubernetes scheduler does. Jobs already leaving (preempting) are used first and cost
// nothing. Works on the plan's what-if state and restores it before returning.
#include <algorithm>

#include "sched/internal/plan_context.h"
#include "sched/queue_order.h"

namespace trainyard::sched::internal {
namespace {

bool eligible(const PlanContext& ctx, const SnapshotJob& job, const SnapshotJob& victim) {
  if (!victim.preemptible || victim.phase != JobPhase::Running) return false;
  switch (ctx.traits.victims) {
    case VictimRule::None:
      return false;
    case VictimRule::LowerPriority:
      return victim.priority < job.priority;
    case VictimRule::LongerRemaining:
      return victim.remaining > job.remaining;
    case VictimRule::LowerServiceQueue:
      return tiresias_queue(victim, ctx.snap.now, ctx.cfg.tiresias) >
             tiresias_queue(job, ctx.snap.now, ctx.cfg.tiresias);
    case VictimRule::QuotaReclaim:
      return victim.team != job.team && victim.team >= 0 && job.team >= 0 &&
             ctx.ledger.same_cohort(job.team, victim.team) && ctx.ledger.borrowing(victim.team);
  }
  return false;
}

PreemptCause cause_of(VictimRule rule) {
  switch (rule) {
    case VictimRule::LowerPriority:
      return PreemptCause::HigherPriority;
    case VictimRule::LongerRemaining:
      return PreemptCause::ShorterRemaining;
    case VictimRule::LowerServiceQueue:
      return PreemptCause::LowerServiceQueue;
    default:
      return PreemptCause::QuotaReclaim;
  }
}

// A reclaiming team must stay within its nominal quota (all models) with the new job.
bool may_reclaim(const PlanContext& ctx, const SnapshotJob& job) {
  if (job.team < 0 || !ctx.ledger.has_quotas()) return false;
  const int all = static_cast<int>(ctx.snap.gpu_models.size());
  const int64_t nominal = ctx.ledger.nominal(job.team, all);
  return nominal >= 0 && ctx.ledger.usage(job.team, all) + job.gpu_share().value() <= nominal;
}

}  // namespace

bool preempt_for(PlanContext& ctx, int job_idx) {
  const SnapshotJob& job = ctx.snap.jobs[job_idx];
  const bool reclaim = ctx.traits.victims == VictimRule::QuotaReclaim;
  if (reclaim && (!ctx.cfg.fair.reclaim || !may_reclaim(ctx, job))) return false;
  // Eligibility shrinks down the ranking, so a shape that found no victims never will again
  // in this plan; reclaim depends on the team, so it is not memoized.
  const Shape shape = shape_of(job);
  if (!reclaim && ctx.preempt_memo.known_not_to_fit(shape)) return false;

  struct Candidate {
    int idx;
    bool leaving;
  };
  std::vector<Candidate> order;
  for (size_t i = 0; i < ctx.snap.jobs.size(); ++i) {
    const SnapshotJob& v = ctx.snap.jobs[i];
    if (!v.is_running()) continue;
    const bool leaving = v.phase == JobPhase::Preempting || ctx.condemned[i];
    if (leaving || eligible(ctx, job, v)) order.push_back({static_cast<int>(i), leaving});
  }
  // Leaving jobs first; then least valuable first: for reclaim the newest start, otherwise the
  // lowest rank; ties by id.
  std::sort(order.begin(), order.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.leaving != b.leaving) return a.leaving;
    const SnapshotJob& ja = ctx.snap.jobs[a.idx];
    const SnapshotJob& jb = ctx.snap.jobs[b.idx];
    if (reclaim) {
      if (ja.started != jb.started) return ja.started > jb.started;
    } else if (ctx.rank_of[a.idx] != ctx.rank_of[b.idx]) {
      return ctx.rank_of[a.idx] > ctx.rank_of[b.idx];
    }
    return ja.id > jb.id;
  });

  const PlaceOptions opts = ctx.place_options();
  std::vector<Candidate> released;
  bool fits = false;
  for (const Candidate& c : order) {
    const SnapshotJob& v = ctx.snap.jobs[c.idx];
    ctx.state.release(v.placement, v.worker);
    released.push_back(c);
    if (place(job, ctx.state, opts).fit == Fit::Fits) {
      fits = true;
      break;
    }
  }
  std::vector<int> victims;
  if (fits) {
    // Reprieve, most valuable first: keep a victim running whenever the job still fits.
    for (auto it = released.rbegin(); it != released.rend(); ++it) {
      if (it->leaving) continue;
      const SnapshotJob& v = ctx.snap.jobs[it->idx];
      ctx.state.apply(v.placement, v.worker);
      if (place(job, ctx.state, opts).fit == Fit::Fits) continue;
      ctx.state.release(v.placement, v.worker);
      victims.push_back(it->idx);
    }
  }
  // Restore the state: everything released and not reprieved goes back.
  for (const Candidate& c : released) {
    if (!fits || c.leaving || std::find(victims.begin(), victims.end(), c.idx) != victims.end()) {
      const SnapshotJob& v = ctx.snap.jobs[c.idx];
      ctx.state.apply(v.placement, v.worker);
    }
  }
  if (!fits) {
    if (!reclaim) ctx.preempt_memo.record_failure(shape);
    return false;
  }
  std::sort(victims.begin(), victims.end());
  for (int v : victims) {
    ctx.condemned[v] = 1;
    ctx.plan.preemptions.push_back({ctx.snap.jobs[v].id, job.id, cause_of(ctx.traits.victims)});
  }
  ctx.wait(job, Stage::Preemption, WaitCode::AwaitingVictims, static_cast<int64_t>(victims.size()));
  return true;
}

}  // namespace trainyard::sched::internal
