// The plan() driver: ranks jobs, then walks them once through the stages (dependency,
// admission, placement, preemption, backfill), applying tentative starts to a what-if copy of
// the cluster so later jobs see the capacity earlier ones took; then the autoscaler.
#include "sched/plan.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <utility>

#include "sched/autoscale.h"
#include "sched/internal/goodput.h"
#include "sched/internal/plan_context.h"
#include "sched/queue_order.h"
#include "util/status.h"

namespace trainyard::sched {
namespace {

using internal::Backfill;
using internal::FitMemo;
using internal::PlanContext;

enum class Attempt { Started, NotNow, Never, OverQuota, Deferred };

struct AttemptResult {
  Attempt attempt;
  uint8_t filter = 0;
  int64_t over_milli = 0;
  bool lent = false;                  // OverQuota within nominal: cohort members borrowed it
  std::vector<Assignment> placement;  // OverQuota: where it would have started
};

class Walk {
 public:
  explicit Walk(PlanContext& ctx) : ctx_(ctx) {}

  // One pending job through dependency, admission, placement, preemption and backfill.
  void consider(int idx) {
    const SnapshotJob& job = ctx_.snap.jobs[idx];
    if (job.waiting_on != util::kNoJob) {
      ctx_.wait(job, Stage::Dependency, WaitCode::DependencyUnfinished, job.waiting_on.value());
      return;
    }
    // Before the order check: a team out of money must not hold the line for other teams.
    if (job.team >= 0 && ctx_.snap.teams[job.team].budget_left <= 0) {
      ctx_.wait(job, Stage::Admission, WaitCode::BudgetExhausted, job.team);
      return;
    }
    if (blocker_ != util::kNoJob) {
      ctx_.wait(job, Stage::Order, WaitCode::HeadOfLine, blocker_.value());
      return;
    }
    if (backfill_ && backfill_->active()) {
      consider_backfill(idx);
      return;
    }
    const AttemptResult r = try_start(idx, ctx_.memo);
    if (r.attempt == Attempt::Started) return;
    if (r.attempt == Attempt::Never) {
      ctx_.wait(job, Stage::Placement, WaitCode::NeverFits, 0, r.filter);
      return;
    }
    if (r.attempt == Attempt::Deferred) {
      deferred_.push_back(idx);
      return;
    }
    if (r.attempt == Attempt::OverQuota) {
      if (r.lent && internal::reclaim_lent_quota(ctx_, idx, r.placement)) return;
      ctx_.wait(job, Stage::Admission, WaitCode::QuotaExceeded, r.over_milli);
      return;
    }
    if (ctx_.traits.victims != VictimRule::None) {
      const internal::PreemptResult p = internal::preempt_for(ctx_, idx);
      if (p.kind == internal::PreemptResult::AwaitingVictims ||
          p.kind == internal::PreemptResult::Deferred) {
        return;
      }
      if (p.kind == internal::PreemptResult::OverQuota) {
        ctx_.wait(job, Stage::Admission, WaitCode::QuotaExceeded, p.over_milli);
        return;
      }
    }
    if (ctx_.traits.strict_fifo) blocker_ = job.id;
    if (ctx_.traits.order == QueueOrderKind::Tiresias && ctx_.promoted_waiting.size() < 8 &&
        tiresias_queue(job, ctx_.snap.now, ctx_.cfg.tiresias) <
            tiresias_service_queue(job, ctx_.cfg.tiresias)) {
      ctx_.promoted_waiting.push_back(idx);
    }
    if (ctx_.traits.backfill && !backfill_) {
      backfill_.emplace(ctx_, idx);
      if (backfill_->active()) ctx_.plan.reservation = {job.id, backfill_->shadow()};
    }
    ctx_.wait(job, Stage::Placement, WaitCode::NoCapacityNow, job.gpu_share().value(), r.filter);
  }

 private:
  void consider_backfill(int idx) {
    const SnapshotJob& job = ctx_.snap.jobs[idx];
    AttemptResult r;
    if (backfill_->ends_before_shadow(job)) {
      backfill_->lift();
      r = try_start(idx, backfill_->short_memo());
      backfill_->restore();
    } else {
      r = try_start(idx, ctx_.memo);
    }
    switch (r.attempt) {
      case Attempt::Started:
        return;
      case Attempt::Never:
        ctx_.wait(job, Stage::Placement, WaitCode::NeverFits, 0, r.filter);
        return;
      case Attempt::OverQuota:
        ctx_.wait(job, Stage::Admission, WaitCode::QuotaExceeded, r.over_milli);
        return;
      case Attempt::Deferred:
        deferred_.push_back(idx);
        return;
      case Attempt::NotNow:
        ctx_.wait(job, Stage::Backfill, WaitCode::BackfillWouldDelay, backfill_->head().value(),
                  r.filter);
        return;
    }
  }

  AttemptResult try_start(int idx, FitMemo& memo) {
    const SnapshotJob& job = ctx_.snap.jobs[idx];
    const internal::Shape shape = internal::shape_of(job);
    if (auto never = never_.find(shape); never != never_.end()) {
      return {Attempt::Never, never->second};
    }
    if (memo.known_not_to_fit(shape)) return {Attempt::NotNow, kFilterGpus};
    const PlaceOptions opts = ctx_.place_options(job);
    PlaceResult placed = place(job, ctx_.state, opts);
    if (placed.fit != Fit::Fits) {
      uint8_t filter = placed.filter;
      if (never_fits(job, ctx_.snap, &filter, opts, &ctx_.node_groups(opts.selector_matches))) {
        never_.emplace(shape, filter);
        return {Attempt::Never, filter};
      }
      memo.record_failure(shape);
      return {Attempt::NotNow, placed.filter};
    }
    const QuotaVerdict verdict = ctx_.ledger.check(job, placed.placement);
    if (!verdict.admitted) {
      return {Attempt::OverQuota, 0, verdict.over_milli, verdict.lent, std::move(placed.placement)};
    }
    if (verdict.borrows && defer_borrowing_) return {Attempt::Deferred};
    ctx_.start(idx, std::move(placed.placement));
    return {Attempt::Started};
  }

 public:
  // While set, a job that could start only by borrowing cohort quota is set aside (deferred())
  // instead: requests within their team's own quota are served first, as Kueue does, so what
  // is admitted does not depend on the order of teams.
  void defer_borrowing(bool on) { defer_borrowing_ = on; }
  std::vector<int> take_deferred() { return std::exchange(deferred_, {}); }

 private:
  PlanContext& ctx_;
  bool defer_borrowing_ = false;
  std::vector<int> deferred_;
  JobId blocker_ = util::kNoJob;
  std::optional<Backfill> backfill_;
  std::unordered_map<internal::Shape, uint8_t, internal::ShapeHash> never_;
};

// How many jobs ahead the walks fetch (prefetch()).
constexpr size_t kAhead = 8;

void prefetch(const SnapshotJob& job) {
  const char* p = reinterpret_cast<const char*>(&job);
  for (size_t offset = 0; offset < sizeof(SnapshotJob); offset += 64)
    __builtin_prefetch(p + offset);
}

// Global orders: one pass over the ranking.
void walk_ranked(PlanContext& ctx) {
  const bool preemptive = ctx.traits.victims != VictimRule::None;
  const std::vector<int> order = rank_jobs(ctx.snap, ctx.cfg, ctx.traits.order, preemptive);
  for (size_t r = 0; r < order.size(); ++r) ctx.rank_of[order[r]] = static_cast<int32_t>(r);
  Walk walk(ctx);
  // The ranking jumps around a job array far larger than the caches: fetch jobs a few ranks
  // ahead so that the walk does not wait on memory for each one.
  for (size_t r = 0; r < order.size(); ++r) {
    if (r + kAhead < order.size()) prefetch(ctx.snap.jobs[order[r + kAhead]]);
    if (!ctx.snap.jobs[order[r]].is_running()) walk.consider(order[r]);
  }
}

// Dominant-resource fair share: the team with the lowest weighted dominant share (after the
// starts so far) offers its oldest pending job next.
void walk_fair_share(PlanContext& ctx) {
  const std::vector<int> by_arrival = rank_jobs(ctx.snap, ctx.cfg, QueueOrderKind::Arrival, false);
  const int teams = static_cast<int>(ctx.snap.teams.size());
  std::vector<std::vector<int>> queue(teams + 1);  // last: jobs without a team
  for (int idx : by_arrival) {
    const int t = ctx.snap.jobs[idx].team;
    queue[t >= 0 ? t : teams].push_back(idx);
  }
  for (size_t r = 0; r < by_arrival.size(); ++r)
    ctx.rank_of[by_arrival[r]] = static_cast<int32_t>(r);
  // The current dominant share, plus the decayed past usage the driver measured (0 when off).
  auto share = [&](int t) {
    if (t >= teams) return 0.0;
    const SnapshotTeam& team = ctx.snap.teams[t];
    const double past = team.weight > 0 ? team.past_usage_share / team.weight : 0.0;
    return ctx.ledger.dominant_share(t) + past;
  };
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  std::vector<size_t> next(teams + 1, 0);
  for (int t = 0; t <= teams; ++t) {
    if (queue[t].empty()) continue;
    heap.emplace(share(t), t);
    for (size_t i = 0; i < std::min(kAhead, queue[t].size()); ++i) {
      prefetch(ctx.snap.jobs[queue[t][i]]);
    }
  }
  Walk walk(ctx);
  // First pass: what fits within the teams' own quotas; then, in the same order, what needs to
  // borrow. A tie between equal shares goes to the lower team index, so without the two passes
  // a borrower listed first could take quota a lender listed second is then refused.
  walk.defer_borrowing(ctx.ledger.has_quotas());
  while (!heap.empty()) {
    auto [s, t] = heap.top();
    heap.pop();
    if (s != share(t)) {
      heap.emplace(share(t), t);
      continue;
    }
    walk.consider(queue[t][next[t]++]);
    if (next[t] == queue[t].size()) continue;
    // A team's jobs lie far apart in the job array, and a team that started nothing keeps its
    // turn: fetch its jobs a few ahead, as walk_ranked() does.
    if (next[t] + kAhead - 1 < queue[t].size()) {
      prefetch(ctx.snap.jobs[queue[t][next[t] + kAhead - 1]]);
    }
    heap.emplace(share(t), t);
  }
  walk.defer_borrowing(false);
  for (int idx : walk.take_deferred()) walk.consider(idx);
}

}  // namespace

Plan plan(const Snapshot& snap, const PolicyConfig& cfg, uint64_t /*seed*/) {
  auto traits = find_policy(cfg.name);
  TY_CHECK_MSG(traits.is_ok(), traits.status().message());
  if (traits->victims == VictimRule::Reallocate) {
    Plan out;
    internal::plan_goodput(snap, cfg, out);
    if (!snap.pools.empty()) autoscale(snap, cfg.autoscale, out);
    return out;
  }
  PlanContext ctx(snap, cfg, *traits);
  if (traits->order == QueueOrderKind::DominantShare) {
    walk_fair_share(ctx);
  } else {
    walk_ranked(ctx);
  }
  // Last: the autoscaler buys for what the walk above could not start.
  if (!snap.pools.empty()) autoscale(snap, cfg.autoscale, ctx.plan);
  return std::move(ctx.plan);
}

}  // namespace trainyard::sched
