// State shared by the stages of one plan() call: the what-if cluster, the quota ledger, the
// memo of request shapes known not to fit, and the plan being built. Internal to sched/.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_set>
#include <vector>

#include "sched/admission.h"
#include "sched/cluster_state.h"
#include "sched/internal/victim_order.h"
#include "sched/placement.h"
#include "sched/plan.h"
#include "sched/policy.h"

namespace trainyard::sched::internal {

// What makes two requests interchangeable for fitting: same result from place().
struct Shape {
  int gpus, workers;
  int64_t milli, cpu, memory;
  uint64_t model_mask;
  size_t mig_and_selector_hash;
  bool preemptible;  // spot nodes are open to preemptible jobs only
  bool operator==(const Shape&) const = default;
};
struct ShapeHash {
  size_t operator()(const Shape& s) const;
};
Shape shape_of(const SnapshotJob& job);

// Remembers shapes that did not fit; valid while capacity only shrinks.
class FitMemo {
 public:
  bool known_not_to_fit(const Shape& s) const { return failed_.contains(s); }
  void record_failure(const Shape& s) { failed_.insert(s); }
  void clear() { failed_.clear(); }

 private:
  std::unordered_set<Shape, ShapeHash> failed_;
};

struct PlanContext {
  PlanContext(const Snapshot& s, const PolicyConfig& c, const PolicyTraits& t);

  const Snapshot& snap;
  const PolicyConfig& cfg;
  const PolicyTraits& traits;
  ClusterState state;
  QuotaLedger ledger;
  NodeSelectorIndex selectors;
  MigProfileIndex mig_profiles;
  FitMemo memo;
  FitMemo preempt_memo;
  std::vector<int32_t> rank_of;    // per job index; running jobs too for preemptive policies
  std::vector<uint8_t> condemned;  // per job index: chosen as a victim in this plan
  // Tiresias: jobs promoted for starvation that wait for capacity, in rank order (at most a
  // few). They rank ahead of every job after them for GPUs that come free, so no later job may
  // preempt victims whose GPUs one of them would take (preemption.cc).
  std::vector<int> promoted_waiting;
  VictimOrder victim_order;
  std::vector<int> started_idx;  // job index of each plan.starts entry
  int victim_searches = 0;       // searches made, against cfg.max_victim_searches
  // Per victim-order position, its quota usage, filled on first use by quota reclaim: every
  // reclaim search returns the same candidates' usage, some of them twice.
  std::vector<QuotaLedger::PlacementUsage> victim_usage;
  std::vector<uint8_t> victim_usage_known;
  // Quota reclaim: per team (x quota keys), the usage of its jobs that a reclaim may take
  // (running, preemptible, past their minimum run time, not condemned); filled at the first
  // reclaim search, kept as victims are condemned. Bounds what any search could give back.
  std::vector<int64_t> reclaimable_usage;
  // Counts one victim search; false (and the job waits PreemptionDeferred) when the plan's
  // budget is spent.
  bool take_search(const SnapshotJob& job) {
    if (cfg.max_victim_searches > 0 && victim_searches >= cfg.max_victim_searches) {
      plan.victim_searches_capped = true;
      wait(job, Stage::Preemption, WaitCode::PreemptionDeferred, cfg.max_victim_searches);
      return false;
    }
    ++victim_searches;
    return true;
  }
  Plan plan;

  // Per node selector (NodeSelectorIndex's answer; nullptr: none), built on first use: only a
  // job that does not fit now asks whether it ever could.
  const NodeGroups& node_groups(const std::vector<bool>* selector_matches) {
    auto it = node_groups_.find(selector_matches);
    if (it == node_groups_.end()) {
      it = node_groups_.try_emplace(selector_matches, snap, selector_matches).first;
    }
    return it->second;
  }
  PlaceOptions place_options(const SnapshotJob& job) {
    return {.strategy = cfg.placement,
            .selector_matches = selectors.matching(job.node_selector),
            .mig_profile_by_model = mig_profiles.by_model(job.worker.mig_profile)};
  }
  void wait(const SnapshotJob& job, Stage stage, WaitCode code, int64_t arg = 0,
            uint8_t filter = 0) {
    plan.waiting.push_back({job.id, stage, code, arg, filter});
  }
  // Takes the capacity and records the start.
  void start(int job_idx, std::vector<Assignment> placement);

 private:
  std::map<const std::vector<bool>*, NodeGroups> node_groups_;
};

// What a victim search for one pending job came to.
struct PreemptResult {
  // Deferred: the plan's search budget is spent; the wait is already recorded.
  enum Kind { NoVictims, AwaitingVictims, OverQuota, Deferred } kind = NoVictims;
  int64_t over_milli = 0;  // OverQuota: by how much the team's quota would still be exceeded
};

// Tries to find running jobs whose preemption lets `job` (at `job_idx`) fit. On success the
// victims are appended to the plan and marked condemned; the state is left unchanged (victims
// hold their GPUs until they stop). The job's quota is checked on the placement it would get,
// with the victims' usage returned, before any victim is condemned: a job its quota refuses
// preempts nobody (OverQuota).
PreemptResult preempt_for(PlanContext& ctx, int job_idx);

// For a job that fits the free capacity at `placement` and is within its team's nominal quota,
// but whose quota cohort members borrowed: preempts borrowing jobs of those members (newest
// start first, then reprieve) until the cohort returns enough of it. Fair policy with reclaim
// only. Returns true when the job now waits: for its victims, or for a later plan when this
// plan's victim searches are spent (PreemptionDeferred).
bool reclaim_lent_quota(PlanContext& ctx, int job_idx, const std::vector<Assignment>& placement);

// EASY backfill: reserves, for the first job that does not fit (the head), the GPUs it will
// get at the earliest time the running jobs' runtime limits free enough (the shadow time).
// Later jobs may start now if they leave the reservation alone, or if their own limit says
// they end before the shadow time (then they may use reserved GPUs: lift(), try, restore()).
class Backfill {
 public:
  Backfill(PlanContext& ctx, int head_idx);
  bool active() const { return shadow_ != Time::max(); }
  Time shadow() const { return shadow_; }
  JobId head() const { return head_; }
  bool ends_before_shadow(const SnapshotJob& job) const;
  void lift();     // gives the reserved GPUs back to the state
  void restore();  // takes them again, except those a started job now uses
  FitMemo& short_memo() { return short_memo_; }

 private:
  PlanContext& ctx_;
  JobId head_;
  Time shadow_ = Time::max();
  std::vector<Assignment> reservation_;  // currently free capacity held for the head job
  model::WorkerRequest no_resources_;
  FitMemo short_memo_;
};

}  // namespace trainyard::sched::internal
