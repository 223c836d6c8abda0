// EASY backfill (Lifka; Slurm's sched/backfill): one reservation, for the first job that does
// not fit. Running jobs are expected to end at start + runtime limit (jobs without a limit
// are assumed to run for a year); the shadow time is the first such end after which the head
// fits. Assumes runtime limits are upper bounds, as schedulers that kill at the limit ensure.
#include <algorithm>

#include "sched/internal/plan_context.h"

namespace trainyard::sched::internal {
namespace {

constexpr Duration kNoLimit = std::chrono::hours(24 * 365);

Time expected_end(const SnapshotJob& job, Time started, Time now) {
  if (job.phase == JobPhase::Preempting) return now;
  const Duration limit = job.runtime_limit.count() > 0 ? job.runtime_limit : kNoLimit;
  return std::max(now, started + limit);
}

bool assignment_fits(const ClusterState& state, const Assignment& a) {
  const NodeFree& f = state.node(a.node_idx);
  if (a.gpu_idx < 0) return true;
  if (a.mig_profile >= 0) {
    const auto* accel = state.snapshot().accelerators[state.snapshot().nodes[a.node_idx].gpu_model];
    return (f.mig_used[a.gpu_idx] & accel->mig_profiles[a.mig_profile].slot_bits(a.mig_start)) == 0;
  }
  return f.gpu_milli_free[a.gpu_idx] >= a.milli;
}

}  // namespace

Backfill::Backfill(PlanContext& ctx, int head_idx) : ctx_(ctx), head_(ctx.snap.jobs[head_idx].id) {
  const SnapshotJob& head = ctx.snap.jobs[head_idx];
  const Time now = ctx.snap.now;
  // Running jobs, and those this plan started, by expected end.
  struct Ending {
    Time end;
    const std::vector<Assignment>* placement;
    const model::WorkerRequest* worker;
    JobId id;
  };
  std::vector<Ending> ends;
  for (const SnapshotJob& j : ctx.snap.jobs) {
    if (j.is_running())
      ends.push_back({expected_end(j, j.started, now), &j.placement, &j.worker, j.id});
  }
  for (size_t s = 0; s < ctx.plan.starts.size(); ++s) {
    const SnapshotJob& j = ctx.snap.jobs[ctx.started_idx[s]];
    ends.push_back({expected_end(j, now, now), &ctx.plan.starts[s].placement, &j.worker, j.id});
  }
  std::sort(ends.begin(), ends.end(), [](const Ending& a, const Ending& b) {
    return a.end != b.end ? a.end < b.end : a.id < b.id;
  });
  ClusterState future = ctx.state;
  const PlaceOptions opts = ctx.place_options(head);
  for (size_t i = 0; i < ends.size(); ++i) {
    future.release(*ends[i].placement, *ends[i].worker);
    if (i + 1 < ends.size() && ends[i + 1].end == ends[i].end) continue;
    PlaceResult r = place(head, future, opts);
    if (r.fit != Fit::Fits) continue;
    shadow_ = ends[i].end;
    for (const Assignment& a : r.placement) {
      if (assignment_fits(ctx.state, a)) reservation_.push_back(a);
    }
    break;
  }
  restore();
}

bool Backfill::ends_before_shadow(const SnapshotJob& job) const {
  return job.runtime_limit.count() > 0 && ctx_.snap.now + job.runtime_limit <= shadow_;
}

void Backfill::lift() {
  ctx_.state.release(reservation_, no_resources_);
}

void Backfill::restore() {
  std::vector<Assignment> kept;
  for (const Assignment& a : reservation_) {
    if (!assignment_fits(ctx_.state, a)) continue;
    ctx_.state.apply(std::span<const Assignment>(&a, 1), no_resources_);
    kept.push_back(a);
  }
  reservation_ = std::move(kept);
}

}  // namespace trainyard::sched::internal
