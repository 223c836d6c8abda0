// Admission: team quotas per GPU model (and for all models), borrowing of unused nominal
// quota within a cohort, and the weighted dominant share used by the fair policy.
// A QuotaLedger is built from the snapshot's running jobs and updated as plan() starts jobs.
// When the fair policy runs and no team has quotas, every team gets an equal weighted share of
// each GPU model as nominal quota, all teams in one cohort with unlimited borrowing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/snapshot.h"

namespace trainyard::sched {

struct QuotaVerdict {
  bool admitted = true;
  int64_t over_milli = 0;  // how far the request would exceed quota + borrowable
  int key = -1;            // quota key (GPU model index, or models count for "all")
  // Admitted only by borrowing unused quota of other cohort members.
  bool borrows = false;
  // Refused although within the team's own nominal quota: cohort members borrowed it (the
  // team may reclaim it from them).
  bool lent = false;
};

class QuotaLedger {
 public:
  QuotaLedger(const Snapshot& snap, bool derive_equal_shares);

  bool has_quotas() const { return has_quotas_; }
  // Whether the team may take `placement` (usage per model it implies) within nominal quota
  // plus what it may borrow from its cohort now.
  QuotaVerdict check(const SnapshotJob& job, std::span<const Assignment> placement) const;
  // The same for a placement whose usage per key (delta()) the caller computed once.
  QuotaVerdict check_usage(int team, std::span<const int64_t> per_key) const;
  // For what-if searches that return other teams' usage and take it back (quota reclaim)
  // without changing the ledger: the unused nominal quota per key of `team`'s cohort, as kept
  // by add() (empty when the team has no cohort); return_to_cohort() changes such a copy as
  // add(victim, placement, -sign) would, for a victim of another team of the same cohort; and
  // check_usage() against the copy decides as check_usage() would after those add() calls.
  std::vector<int64_t> cohort_left_of(int team) const;
  void return_to_cohort(int victim_team, std::span<const Assignment> placement, int sign,
                        std::span<int64_t> cohort_left) const;
  QuotaVerdict check_usage(int team, std::span<const int64_t> per_key,
                           std::span<const int64_t> cohort_left) const;
  // A placement's usage in compact form, for searches that return the same placements to the
  // cohort many times: the milli-GPUs it takes of its one GPU model (model -1: none). `mixed`
  // when it spans several models: return_to_cohort() then reads the placement again.
  struct PlacementUsage {
    int32_t model = -1;
    bool mixed = false;
    int64_t milli = 0;
  };
  PlacementUsage compact_usage(std::span<const Assignment> placement) const;
  // return_to_cohort() for usage per key (usage_of()'s form), such as several jobs' summed.
  void return_to_cohort(int victim_team, std::span<const int64_t> per_key, int sign,
                        std::span<int64_t> cohort_left) const;
  // return_to_cohort() for a placement whose compact_usage() is `usage`.
  void return_to_cohort(int victim_team, const PlacementUsage& usage,
                        std::span<const Assignment> placement, int sign,
                        std::span<int64_t> cohort_left) const;
  // Milli-GPUs per key (models, then "all") that a placement takes.
  std::vector<int64_t> usage_of(std::span<const Assignment> placement) const;
  void add(const SnapshotJob& job, std::span<const Assignment> placement, int sign);
  // add() for usage per key (usage_of()'s form) the caller worked out.
  void add_usage(int team, std::span<const int64_t> per_key, int sign);
  int keys() const { return keys_; }

  int64_t usage(int team, int key) const { return usage_[team * keys_ + key]; }
  int64_t nominal(int team, int key) const { return quota(team, key).nominal_milli; }
  // True when the team uses more than its nominal quota of any key.
  bool borrowing(int team) const;
  // True when the team, after taking `placement`, stays within its nominal quota.
  bool within_nominal_after(const SnapshotJob& job, std::span<const Assignment> placement) const;
  // Whether the job may reclaim lent quota for `placement`: some quota key it touches has a
  // nominal quota (per model or "*"), and it stays within every such nominal quota.
  bool may_reclaim_for(const SnapshotJob& job, std::span<const Assignment> placement) const;
  // Whether any quota key of the team has a nominal quota.
  bool has_nominal(int team) const;
  bool same_cohort(int a, int b) const;
  // Weighted dominant share over GPU models: max_m usage_m / capacity_m, divided by weight.
  double dominant_share(int team) const;

 private:
  QuotaEntry quota(int team, int key) const;
  // Milli-GPUs per key (models, then "all") that a placement takes.
  void delta(std::span<const Assignment> placement, std::vector<int64_t>* out) const;

  const Snapshot* snap_;
  int keys_;
  bool has_quotas_ = false;
  bool derived_ = false;
  double total_weight_ = 0;
  std::vector<int64_t> capacity_;          // per key
  std::vector<int64_t> usage_;             // team * keys_ + key
  std::vector<QuotaEntry> derived_quota_;  // team * keys_ + key, when derived
  // Per cohort and key: the members' nominal quota minus their usage (members with a nominal
  // quota for the key only), kept by add(). Derived quotas form one cohort.
  std::vector<int64_t> cohort_left_;
  int cohort_of(int team) const;
  mutable std::vector<int64_t> scratch_;
};

}  // namespace trainyard::sched
