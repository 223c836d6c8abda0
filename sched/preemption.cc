// Victim selection: remove the least valuable eligible running jobs one at a time until the
// pending job fits, then give back (reprieve) every victim not needed, most valuable first,
// as the Kubernetes scheduler does. Jobs already leaving (preempting) are used first and cost
// nothing. Works on the plan's what-if state and restores it before returning.
#include <algorithm>

#include "sched/internal/plan_context.h"
#include "sched/queue_order.h"
#include "util/status.h"

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
      return tiresias_service_queue(victim, ctx.cfg.tiresias) >
             tiresias_service_queue(job, ctx.cfg.tiresias);
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

struct Candidate {
  int idx;
  bool leaving;
};

bool is_leaving(const PlanContext& ctx, int idx) {
  return ctx.snap.jobs[idx].phase == JobPhase::Preempting || ctx.condemned[idx];
}

void build_victim_order(PlanContext& ctx, bool reclaim) {
  VictimOrder& order = ctx.victim_order;
  for (size_t i = 0; i < ctx.snap.jobs.size(); ++i) {
    if (ctx.snap.jobs[i].is_running()) order.jobs.push_back(static_cast<int>(i));
  }
  std::sort(order.jobs.begin(), order.jobs.end(), [&](int a, int b) {
    const SnapshotJob& ja = ctx.snap.jobs[a];
    const SnapshotJob& jb = ctx.snap.jobs[b];
    if (reclaim) {
      if (ja.started != jb.started) return ja.started > jb.started;
    } else if (ctx.rank_of[a] != ctx.rank_of[b]) {
      return ctx.rank_of[a] > ctx.rank_of[b];
    }
    return ja.id > jb.id;
  });
  order.pos_of.assign(ctx.snap.jobs.size(), -1);
  for (size_t pos = 0; pos < order.jobs.size(); ++pos) {
    order.pos_of[order.jobs[pos]] = static_cast<int32_t>(pos);
    if (is_leaving(ctx, order.jobs[pos])) order.leaving.push_back(static_cast<int32_t>(pos));
  }
  order.built = true;
}

// Releases running jobs one at a time and says whether the job fits after each, as
// place(job).fit would, but from the nodes each release touches: the job does not fit before
// the first release (the caller's place() said so), and it fits exactly when the nodes'
// node_capacity() adds up to its workers, so only the touched nodes' share of that sum changes.
class ReleaseFit {
 public:
  ReleaseFit(ClusterState& state, const SnapshotJob& job, const PlaceOptions& opts)
      : state_(state),
        job_(job),
        opts_(opts),
        incremental_(job.worker.gpus > 0 || job.workers == 1) {
    if (job.worker.gpus == 0 || job.workers == 1) return;  // capacity 0 everywhere, or unused
    for (int m = 0; m < static_cast<int>(state.snapshot().gpu_models.size()); ++m) {
      for (int level = job.worker.gpus; level <= model::kMaxGpusPerNode; ++level) {
        for (int32_t idx : state.bucket(m, level)) {
          capacity_ += node_capacity(job, state, idx, opts);
        }
      }
    }
  }

  bool release(const SnapshotJob& victim) {
    if (!incremental_) {
      state_.release(victim.placement, victim.worker);
      return place(job_, state_, opts_).fit == Fit::Fits;
    }
    capacity_ -= touched_capacity(victim.placement);
    state_.release(victim.placement, victim.worker);
    capacity_ += touched_capacity(victim.placement);
    return capacity_ >= job_.workers;
  }

 private:
  int64_t touched_capacity(std::span<const Assignment> placement) {
    nodes_.clear();
    for (const Assignment& a : placement) {
      if (!nodes_.empty() && nodes_.back() == a.node_idx) continue;  // the usual run on a node
      if (std::find(nodes_.begin(), nodes_.end(), a.node_idx) == nodes_.end()) {
        nodes_.push_back(a.node_idx);
      }
    }
    int64_t sum = 0;
    for (int32_t idx : nodes_) sum += node_capacity(job_, state_, idx, opts_);
    return sum;
  }

  ClusterState& state_;
  const SnapshotJob& job_;
  const PlaceOptions& opts_;
  bool incremental_;
  int64_t capacity_ = 0;  // sum of node_capacity() over all nodes
  std::vector<int32_t> nodes_;
};

}  // namespace

bool preempt_for(PlanContext& ctx, int job_idx) {
  const SnapshotJob& job = ctx.snap.jobs[job_idx];
  const bool reclaim = ctx.traits.victims == VictimRule::QuotaReclaim;
  if (reclaim && (!ctx.cfg.fair.reclaim || !may_reclaim(ctx, job))) return false;
  // Eligibility shrinks down the ranking, so a shape that found no victims never will again
  // in this plan; reclaim depends on the team, so it is not memoized.
  const Shape shape = shape_of(job);
  if (!reclaim && ctx.preempt_memo.known_not_to_fit(shape)) return false;

  if (!ctx.victim_order.built) build_victim_order(ctx, reclaim);
  const VictimOrder& order = ctx.victim_order;
  const PlaceOptions opts = ctx.place_options(job);
  TY_DCHECK(place(job, ctx.state, opts).fit != Fit::Fits);
  std::vector<Candidate> released;
  ReleaseFit release_fit(ctx.state, job, opts);
  auto release_fits = [&](int idx, bool leaving) {
    released.push_back({idx, leaving});
    return release_fit.release(ctx.snap.jobs[idx]);
  };
  // Leaving jobs first (they cost nothing); then eligible ones, least valuable first.
  bool fits = false;
  for (size_t i = 0; !fits && i < order.leaving.size(); ++i) {
    fits = release_fits(order.jobs[order.leaving[i]], true);
  }
  for (size_t pos = 0; !fits && pos < order.jobs.size(); ++pos) {
    const int idx = order.jobs[pos];
    if (is_leaving(ctx, idx) || !eligible(ctx, job, ctx.snap.jobs[idx])) continue;
    fits = release_fits(idx, false);
  }
  std::vector<int> victims;
  std::vector<int32_t> claimed;    // leaving jobs whose GPUs this job counts on
  std::vector<Assignment> future;  // where the job will start once the victims are gone
  std::vector<uint8_t> restored(released.size(), 0);
  if (fits) {
    // Reprieve, most valuable first: keep a victim running (or a leaving job's GPUs for later
    // jobs) whenever the job still fits without it.
    for (size_t k = released.size(); k-- > 0;) {
      const SnapshotJob& v = ctx.snap.jobs[released[k].idx];
      ctx.state.apply(v.placement, v.worker);
      if (place(job, ctx.state, opts).fit == Fit::Fits) {
        restored[k] = 1;
        continue;
      }
      ctx.state.release(v.placement, v.worker);
      if (released[k].leaving) {
        claimed.push_back(ctx.victim_order.pos_of[released[k].idx]);
      } else {
        victims.push_back(released[k].idx);
      }
    }
    future = place(job, ctx.state, opts).placement;
  }
  // Restore the state: everything released goes back (it holds its GPUs until it stops).
  for (size_t k = 0; k < released.size(); ++k) {
    if (restored[k]) continue;
    const SnapshotJob& v = ctx.snap.jobs[released[k].idx];
    ctx.state.apply(v.placement, v.worker);
  }
  if (!fits) {
    if (!reclaim) ctx.preempt_memo.record_failure(shape);
    return false;
  }
  // The GPUs of the leaving jobs this job counts on are promised to it: later jobs in this plan
  // must not count on them too (they would wait for capacity that is not coming).
  auto& leaving_pos = ctx.victim_order.leaving;
  std::erase_if(leaving_pos, [&](int32_t pos) {
    return std::find(claimed.begin(), claimed.end(), pos) != claimed.end();
  });
  // By job id, not vector position, so the plan does not depend on the snapshot's job order.
  std::sort(victims.begin(), victims.end(),
            [&](int a, int b) { return ctx.snap.jobs[a].id < ctx.snap.jobs[b].id; });
  for (int v : victims) {
    ctx.condemned[v] = 1;  // leaving now, and promised to this job: not in victim_order.leaving
    ctx.plan.preemptions.push_back({ctx.snap.jobs[v].id, job.id, cause_of(ctx.traits.victims)});
  }
  // Hold the free part of the future placement: otherwise lower-ranked jobs take those GPUs
  // while the victims are in their grace period, and the job must preempt again (a livelock).
  ctx.state.hold_free(future);
  ctx.wait(job, Stage::Preemption, WaitCode::AwaitingVictims, static_cast<int64_t>(victims.size()));
  return true;
}

}  // namespace trainyard::sched::internal
