// Victim selection: remove the least valuable eligible running jobs one at a time until the
// pending job fits, then give back (reprieve) every victim not needed, most valuable first,
// as the Kubernetes scheduler does. Jobs already leaving (preempting) are used first and cost
// nothing. Works on the plan's what-if state and restores it before returning.
#include <algorithm>

#include "sched/internal/fit_tracker.h"
#include "sched/internal/plan_context.h"
#include "util/status.h"

namespace trainyard::sched::internal {
namespace {

// For reclaim, per team: whether `job_team` may preempt that team's jobs (another team of its
// cohort, borrowing). Asked once per search rather than once per candidate.
std::vector<uint8_t> reclaimable_teams(const PlanContext& ctx, int job_team) {
  std::vector<uint8_t> out(ctx.snap.teams.size(), 0);
  if (ctx.traits.victims != VictimRule::QuotaReclaim || job_team < 0) return out;
  for (int t = 0; t < static_cast<int>(out.size()); ++t) {
    out[t] = t != job_team && ctx.ledger.same_cohort(job_team, t) && ctx.ledger.borrowing(t);
  }
  return out;
}

bool eligible(const PlanContext& ctx, const VictimFacts& job, const VictimFacts& victim,
              std::span<const uint8_t> reclaimable) {
  if (!victim.running_preemptible) return false;
  switch (ctx.traits.victims) {
    case VictimRule::None:
      return false;
    case VictimRule::LowerPriority:
      return victim.priority < job.priority;
    case VictimRule::LongerRemaining:
      return victim.remaining > job.remaining;
    case VictimRule::LowerServiceQueue:
      return victim.service_queue > job.service_queue;
    case VictimRule::QuotaReclaim:
      return victim.team >= 0 && reclaimable[victim.team];
    case VictimRule::Reallocate:  // plans in sched/goodput.cc, never here
      return false;
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

// A cheap test before any search: a reclaiming team needs a nominal quota, and stays within its
// "*" quota, when it has one, with the new job. The per-model quotas are checked on the
// placement the search finds (QuotaLedger::may_reclaim_for).
bool may_reclaim(const PlanContext& ctx, const SnapshotJob& job) {
  if (!ctx.ledger.has_nominal(job.team)) return false;
  const int all = static_cast<int>(ctx.snap.gpu_models.size());
  const int64_t nominal = ctx.ledger.nominal(job.team, all);
  return nominal < 0 || ctx.ledger.usage(job.team, all) + job.gpu_share().value() <= nominal;
}

// Adds (sign +1) or removes (-1) the quota usage of the jobs at `positions`.
void count_usage(PlanContext& ctx, std::span<const int32_t> positions, int sign) {
  for (int32_t pos : positions) {
    const int v = ctx.victim_order.jobs[pos];
    ctx.ledger.add(ctx.snap.jobs[v], ctx.snap.jobs[v].placement, sign);
  }
}

// Condemns `victims` (job indices) for the job, promises it the GPUs of `placement` and the
// leaving jobs at `claimed`, and records that it waits.
void condemn(PlanContext& ctx, const SnapshotJob& job, std::vector<int> victims,
             const std::vector<int32_t>& claimed, const std::vector<Assignment>& placement) {
  VictimOrder& order = ctx.victim_order;
  // The GPUs of the leaving jobs this job counts on are promised to it: later jobs in this plan
  // must not count on them too (they would wait for capacity that is not coming).
  std::erase_if(order.leaving, [&](int32_t pos) {
    return std::find(claimed.begin(), claimed.end(), pos) != claimed.end();
  });
  // By job id, not vector position, so the plan does not depend on the snapshot's job order.
  std::sort(victims.begin(), victims.end(),
            [&](int a, int b) { return ctx.snap.jobs[a].id < ctx.snap.jobs[b].id; });
  const int keys = ctx.ledger.keys();
  for (int v : victims) {
    const int team = ctx.snap.jobs[v].team;
    if (!ctx.reclaimable_usage.empty() && team >= 0) {
      const std::vector<int64_t> usage = ctx.ledger.usage_of(ctx.snap.jobs[v].placement);
      for (int k = 0; k < keys; ++k) ctx.reclaimable_usage[team * keys + k] -= usage[k];
    }
    ctx.condemned[v] = 1;  // leaving now, and promised to this job: not in victim_order.leaving
    order.gone[order.pos_of[v]] = 1;
    ctx.plan.preemptions.push_back({ctx.snap.jobs[v].id, job.id, cause_of(ctx.traits.victims)});
  }
  // Hold the free part of the future placement: otherwise lower-ranked jobs take those GPUs
  // while the victims are in their grace period, and the job must preempt again (a livelock).
  ctx.state.hold_free(placement);
  ctx.wait(job, Stage::Preemption, WaitCode::AwaitingVictims, static_cast<int64_t>(victims.size()));
}

struct Candidate {
  int32_t pos;  // in the victim order
  bool leaving;
};

// Whether `job` could be admitted with `wants` if every job a reclaim may take from the teams
// in `reclaimable`, and every leaving job of the other teams of its cohort, gave its quota back
// to `cohort_left` (a copy). Giving back only ever helps, so when this fails, so does the
// search, which then need not look at each candidate.
bool reclaim_could_admit(PlanContext& ctx, const SnapshotJob& job, std::span<const int64_t> wants,
                         std::vector<int64_t> cohort_left, std::span<const uint8_t> reclaimable) {
  VictimOrder& order = ctx.victim_order;
  const int keys = ctx.ledger.keys();
  const int teams = static_cast<int>(ctx.snap.teams.size());
  if (ctx.reclaimable_usage.empty()) {
    ctx.reclaimable_usage.assign(static_cast<size_t>(teams) * keys, 0);
    const auto end = static_cast<int32_t>(order.jobs.size());
    for (int32_t pos = order.staying_from(0); pos < end; pos = order.staying_from(pos + 1)) {
      const VictimFacts& f = order.facts[pos];
      if (!f.running_preemptible || f.team < 0) continue;
      const std::vector<int64_t> usage = ctx.ledger.usage_of(order.placement(pos));
      for (int k = 0; k < keys; ++k) ctx.reclaimable_usage[f.team * keys + k] += usage[k];
    }
  }
  if (cohort_left.empty()) return true;  // no cohort: the search decides
  for (int t = 0; t < teams; ++t) {
    if (!reclaimable[t]) continue;
    ctx.ledger.return_to_cohort(
        t, std::span(ctx.reclaimable_usage).subspan(static_cast<size_t>(t) * keys, keys), +1,
        cohort_left);
  }
  for (int32_t pos : order.leaving) {
    const int team = order.facts[pos].team;
    if (team < 0 || team == job.team || !ctx.ledger.same_cohort(team, job.team)) continue;
    ctx.ledger.return_to_cohort(team, order.placement(pos), +1, cohort_left);
  }
  return ctx.ledger.check_usage(job.team, wants, cohort_left).admitted;
}

}  // namespace

PreemptResult preempt_for(PlanContext& ctx, int job_idx) {
  const SnapshotJob& job = ctx.snap.jobs[job_idx];
  const bool reclaim = ctx.traits.victims == VictimRule::QuotaReclaim;
  if (reclaim && (!ctx.cfg.fair.reclaim || !may_reclaim(ctx, job))) return {};
  // Eligibility shrinks down the ranking, so a shape that found no victims never will again
  // in this plan; reclaim depends on the team, so it is not memoized.
  const Shape shape = shape_of(job);
  if (!reclaim && ctx.preempt_memo.known_not_to_fit(shape)) return {};
  if (!ctx.take_search(job)) return {PreemptResult::Deferred};

  VictimOrder& order = ctx.victim_order;
  if (!order.built) {
    order.build(ctx.snap, ctx.rank_of, ctx.traits.victims, ctx.cfg.tiresias, ctx.cfg.min_runtime);
  }
  const PlaceOptions opts = ctx.place_options(job);
  TY_DCHECK(place(job, ctx.state, opts).fit != Fit::Fits);
  std::vector<Candidate> released;
  FitTracker tracker(ctx.state, job, opts);
  auto release_fits = [&](int32_t pos, bool leaving) {
    released.push_back({pos, leaving});
    return tracker.release(order, pos);
  };
  // Leaving jobs first (they cost nothing); then eligible ones, least valuable first.
  bool fits = false;
  for (size_t i = 0; !fits && i < order.leaving.size(); ++i) {
    fits = release_fits(order.leaving[i], true);
  }
  const VictimFacts job_facts = facts_of(job, ctx.cfg.tiresias);
  const std::vector<uint8_t> reclaimable = reclaimable_teams(ctx, job.team);
  const auto end = static_cast<int32_t>(order.jobs.size());
  for (int32_t pos = order.staying_from(0); !fits && pos < end; pos = order.staying_from(pos + 1)) {
    if (eligible(ctx, job_facts, order.facts[pos], reclaimable)) fits = release_fits(pos, false);
  }
  std::vector<int> victims;
  std::vector<int32_t> claimed;    // leaving jobs whose GPUs this job counts on
  std::vector<Assignment> future;  // where the job will start once the victims are gone
  std::vector<uint8_t> restored(released.size(), 0);
  if (fits) {
    // Reprieve, most valuable first: keep a victim running (or a leaving job's GPUs for later
    // jobs) whenever the job still fits without it.
    for (size_t k = released.size(); k-- > 0;) {
      if (tracker.apply(order, released[k].pos)) {
        restored[k] = 1;
        continue;
      }
      tracker.release(order, released[k].pos);
      if (released[k].leaving) {
        claimed.push_back(released[k].pos);
      } else {
        victims.push_back(order.jobs[released[k].pos]);
      }
    }
    future = place(job, ctx.state, opts).placement;
    // GPUs freed for this job that a job promoted for starvation (ranked ahead, waiting) could
    // use would go to it instead once the victims stop, and this job would preempt again: a
    // cycle in which no one runs long enough to checkpoint. Then it does not preempt.
    for (int other : ctx.promoted_waiting) {
      const SnapshotJob& o = ctx.snap.jobs[other];
      if (place(o, ctx.state, ctx.place_options(o)).fit == Fit::Fits) {
        fits = false;
        break;
      }
    }
  }
  // Restore the state: everything released goes back (it holds its GPUs until it stops).
  for (size_t k = 0; k < released.size(); ++k) {
    if (restored[k]) continue;
    ctx.state.apply(order.placement(released[k].pos), order.worker(released[k].pos));
  }
  if (!fits) {
    if (!reclaim) ctx.preempt_memo.record_failure(shape);
    return {};
  }
  // Quota, before anyone is preempted: on the placement the job will get, with what the
  // victims and the leaving jobs it counts on hold returned to their teams.
  std::vector<int32_t> returned = claimed;
  for (int v : victims) returned.push_back(order.pos_of[v]);
  count_usage(ctx, returned, -1);
  const QuotaVerdict verdict = ctx.ledger.check(job, future);
  const bool reclaim_ok = !reclaim || ctx.ledger.may_reclaim_for(job, future);
  count_usage(ctx, returned, +1);
  if (!verdict.admitted) return {PreemptResult::OverQuota, verdict.over_milli};
  if (!reclaim_ok) return {};
  condemn(ctx, job, std::move(victims), claimed, future);
  return {PreemptResult::AwaitingVictims};
}

bool reclaim_lent_quota(PlanContext& ctx, int job_idx, const std::vector<Assignment>& placement) {
  const SnapshotJob& job = ctx.snap.jobs[job_idx];
  if (ctx.traits.victims != VictimRule::QuotaReclaim || !ctx.cfg.fair.reclaim) return false;
  if (!ctx.ledger.may_reclaim_for(job, placement)) return false;
  if (!ctx.take_search(job)) return true;  // waits PreemptionDeferred
  VictimOrder& order = ctx.victim_order;
  if (!order.built) {
    order.build(ctx.snap, ctx.rank_of, ctx.traits.victims, ctx.cfg.tiresias, ctx.cfg.min_runtime);
  }
  const std::vector<uint8_t> reclaimable = reclaimable_teams(ctx, job.team);
  const std::vector<int64_t> wants = ctx.ledger.usage_of(placement);
  // The search returns and takes back only the usage of other teams of the job's cohort, so it
  // works on a copy of what the cohort has left and leaves the ledger as it is: the victims
  // hold their quota until they stop.
  std::vector<int64_t> cohort_left = ctx.ledger.cohort_left_of(job.team);
  if (!reclaim_could_admit(ctx, job, wants, cohort_left, reclaimable)) return false;
  if (ctx.victim_usage_known.empty()) {
    ctx.victim_usage.resize(order.jobs.size());
    ctx.victim_usage_known.assign(order.jobs.size(), 0);
  }
  auto give_back = [&](int32_t pos, int sign) {
    if (!ctx.victim_usage_known[pos]) {
      ctx.victim_usage[pos] = ctx.ledger.compact_usage(order.placement(pos));
      ctx.victim_usage_known[pos] = 1;
    }
    ctx.ledger.return_to_cohort(order.facts[pos].team, ctx.victim_usage[pos], order.placement(pos),
                                sign, cohort_left);
  };
  auto admitted = [&] { return ctx.ledger.check_usage(job.team, wants, cohort_left).admitted; };
  // Quota held by leaving jobs of the cohort comes back anyway; then the borrowers' jobs,
  // newest start first.
  std::vector<Candidate> released;
  bool ok = false;
  for (size_t i = 0; !ok && i < order.leaving.size(); ++i) {
    const int32_t pos = order.leaving[i];
    const int team = order.facts[pos].team;
    if (team < 0 || team == job.team || !ctx.ledger.same_cohort(team, job.team)) continue;
    give_back(pos, +1);
    released.push_back({pos, true});
    ok = admitted();
  }
  const VictimFacts job_facts = facts_of(job, ctx.cfg.tiresias);
  const auto end = static_cast<int32_t>(order.jobs.size());
  for (int32_t pos = order.staying_from(0); !ok && pos < end; pos = order.staying_from(pos + 1)) {
    if (!eligible(ctx, job_facts, order.facts[pos], reclaimable)) continue;
    give_back(pos, +1);
    released.push_back({pos, false});
    ok = admitted();
  }
  if (!ok) return false;
  // Reprieve, most valuable first: a job keeps running whenever the quota suffices without it.
  std::vector<int> victims;
  std::vector<int32_t> claimed;
  for (size_t k = released.size(); k-- > 0;) {
    const int32_t pos = released[k].pos;
    give_back(pos, -1);
    if (admitted()) continue;  // reprieved
    give_back(pos, +1);
    if (released[k].leaving) {
      claimed.push_back(pos);
    } else {
      victims.push_back(order.jobs[pos]);
    }
  }
  condemn(ctx, job, std::move(victims), claimed, placement);
  return true;
}

}  // namespace trainyard::sched::internal
