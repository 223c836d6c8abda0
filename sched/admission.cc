#include "sched/admission.h"

#include <algorithm>

namespace trainyard::sched {

QuotaLedger::QuotaLedger(const Snapshot& snap, bool derive_equal_shares)
    : snap_(&snap),
      keys_(static_cast<int>(snap.gpu_models.size()) + 1),
      capacity_(keys_, 0),
      usage_(snap.teams.size() * keys_, 0) {
  for (const SnapshotNode& n : snap.nodes) {
    if (n.gpu_model < 0) continue;
    capacity_[n.gpu_model] += int64_t{n.gpu_count} * model::kMilliPerGpu;
    capacity_[keys_ - 1] += int64_t{n.gpu_count} * model::kMilliPerGpu;
  }
  for (const SnapshotTeam& t : snap.teams) has_quotas_ = has_quotas_ || !t.quota.empty();
  if (!has_quotas_ && derive_equal_shares && !snap.teams.empty()) {
    derived_ = true;
    has_quotas_ = true;
    derived_quota_.resize(snap.teams.size() * keys_);
    for (const auto& t : snap.teams) total_weight_ += t.weight;
    const size_t n = snap.teams.size();
    for (int k = 0; k < keys_; ++k) {
      // Each team's weighted share rounded down; the milli-GPUs lost to rounding go one each to
      // the first teams, so that the shares add up to the whole capacity.
      int64_t left = capacity_[k];
      for (size_t t = 0; t < n; ++t) {
        const double share =
            total_weight_ > 0 ? snap.teams[t].weight / total_weight_ : 1.0 / static_cast<double>(n);
        const auto nominal = static_cast<int64_t>(static_cast<double>(capacity_[k]) * share);
        derived_quota_[t * keys_ + k] = {nominal, -1};
        left -= nominal;
      }
      for (size_t t = 0; left > 0; t = (t + 1) % n, --left) {
        ++derived_quota_[t * keys_ + k].nominal_milli;
      }
    }
  }
  const size_t cohorts = derived_ ? 1 : snap.cohorts.size();
  cohort_left_.assign(cohorts * keys_, 0);
  for (int t = 0; t < static_cast<int>(snap.teams.size()); ++t) {
    const int c = cohort_of(t);
    if (c < 0) continue;
    for (int k = 0; k < keys_; ++k) {
      const QuotaEntry q = quota(t, k);
      if (q.nominal_milli >= 0) cohort_left_[c * keys_ + k] += q.nominal_milli;
    }
  }
  for (const SnapshotJob& job : snap.jobs) {
    if (job.is_running()) add(job, job.placement, +1);
  }
}

int QuotaLedger::cohort_of(int team) const {
  if (team < 0) return -1;
  if (derived_) return 0;
  const int c = snap_->teams[team].cohort;
  return c >= 0 && static_cast<size_t>(c + 1) * keys_ <= cohort_left_.size() ? c : -1;
}

QuotaEntry QuotaLedger::quota(int team, int key) const {
  if (derived_) return derived_quota_[team * keys_ + key];
  const auto& q = snap_->teams[team].quota;
  if (q.empty()) return {};
  return q[key];
}

bool QuotaLedger::same_cohort(int a, int b) const {
  if (derived_) return true;
  const int ca = snap_->teams[a].cohort;
  return ca >= 0 && ca == snap_->teams[b].cohort;
}

void QuotaLedger::delta(std::span<const Assignment> placement, std::vector<int64_t>* out) const {
  out->assign(keys_, 0);
  for (const Assignment& a : placement) {
    if (a.gpu_idx < 0) continue;
    const int m = snap_->nodes[a.node_idx].gpu_model;
    int64_t milli = a.milli;
    if (a.mig_profile >= 0) {
      milli = model::mig_milli(snap_->accelerators[m]->mig_profiles[a.mig_profile].compute_slices);
    }
    (*out)[m] += milli;
    (*out)[keys_ - 1] += milli;
  }
}

void QuotaLedger::add(const SnapshotJob& job, std::span<const Assignment> placement, int sign) {
  if (job.team < 0) return;
  delta(placement, &scratch_);
  add_usage(job.team, scratch_, sign);
}

void QuotaLedger::add_usage(int team, std::span<const int64_t> per_key, int sign) {
  if (team < 0) return;
  const int c = cohort_of(team);
  for (int k = 0; k < keys_; ++k) {
    usage_[team * keys_ + k] += sign * per_key[k];
    if (c >= 0 && quota(team, k).nominal_milli >= 0) {
      cohort_left_[c * keys_ + k] -= sign * per_key[k];
    }
  }
}

std::vector<int64_t> QuotaLedger::usage_of(std::span<const Assignment> placement) const {
  std::vector<int64_t> out;
  delta(placement, &out);
  return out;
}

QuotaVerdict QuotaLedger::check(const SnapshotJob& job,
                                std::span<const Assignment> placement) const {
  if (!has_quotas_ || job.team < 0) return {};
  delta(placement, &scratch_);
  return check_usage(job.team, scratch_);
}

std::vector<int64_t> QuotaLedger::cohort_left_of(int team) const {
  const int c = cohort_of(team);
  if (c < 0) return {};
  const auto first = cohort_left_.begin() + static_cast<std::ptrdiff_t>(c) * keys_;
  return {first, first + keys_};
}

void QuotaLedger::return_to_cohort(int victim_team, std::span<const Assignment> placement, int sign,
                                   std::span<int64_t> cohort_left) const {
  if (victim_team < 0 || cohort_left.empty() || cohort_of(victim_team) < 0) return;
  delta(placement, &scratch_);
  for (int k = 0; k < keys_; ++k) {
    if (quota(victim_team, k).nominal_milli >= 0) cohort_left[k] += sign * scratch_[k];
  }
}

void QuotaLedger::return_to_cohort(int victim_team, std::span<const int64_t> per_key, int sign,
                                   std::span<int64_t> cohort_left) const {
  if (victim_team < 0 || cohort_left.empty() || cohort_of(victim_team) < 0) return;
  for (int k = 0; k < keys_; ++k) {
    if (quota(victim_team, k).nominal_milli >= 0) cohort_left[k] += sign * per_key[k];
  }
}

QuotaLedger::PlacementUsage QuotaLedger::compact_usage(
    std::span<const Assignment> placement) const {
  delta(placement, &scratch_);
  PlacementUsage usage;
  for (int k = 0; k + 1 < keys_; ++k) {
    if (scratch_[k] == 0) continue;
    if (usage.model >= 0) return {.model = -1, .mixed = true};
    usage = {.model = k, .milli = scratch_[k]};
  }
  return usage;
}

void QuotaLedger::return_to_cohort(int victim_team, const PlacementUsage& usage,
                                   std::span<const Assignment> placement, int sign,
                                   std::span<int64_t> cohort_left) const {
  if (usage.mixed) return return_to_cohort(victim_team, placement, sign, cohort_left);
  if (usage.model < 0 || victim_team < 0 || cohort_left.empty() || cohort_of(victim_team) < 0)
    return;
  // As the loop over all keys does: the model's key and the "all" key change, the rest are 0.
  if (quota(victim_team, usage.model).nominal_milli >= 0)
    cohort_left[usage.model] += sign * usage.milli;
  if (quota(victim_team, keys_ - 1).nominal_milli >= 0)
    cohort_left[keys_ - 1] += sign * usage.milli;
}

QuotaVerdict QuotaLedger::check_usage(int team, std::span<const int64_t> per_key) const {
  const int c = cohort_of(team);
  if (c < 0) return check_usage(team, per_key, {});
  return check_usage(team, per_key,
                     std::span(cohort_left_).subspan(static_cast<size_t>(c) * keys_, keys_));
}

QuotaVerdict QuotaLedger::check_usage(int team, std::span<const int64_t> per_key,
                                      std::span<const int64_t> cohort_left) const {
  if (!has_quotas_ || team < 0) return {};
  bool borrows = false;
  for (int k = 0; k < keys_; ++k) {
    if (per_key[k] == 0) continue;
    const QuotaEntry q = quota(team, k);
    if (q.nominal_milli < 0) continue;
    const int64_t want = usage(team, k) + per_key[k];
    // What the cohort has left: the others' nominal quota minus their usage, borrowers
    // included, so quota one member already borrowed is not lent a second time.
    const int64_t others_left =
        cohort_left.empty() ? 0 : cohort_left[k] - (q.nominal_milli - usage(team, k));
    if (want <= q.nominal_milli) {
      // Within its own nominal quota, unless members borrowed that part of it: then the
      // cohort as a whole would exceed its quota (others_left < 0 is what they borrowed).
      const int64_t lent_out = std::max<int64_t>(0, -others_left);
      const int64_t over = want + lent_out - q.nominal_milli;
      if (over > 0) return {.admitted = false, .over_milli = over, .key = k, .lent = true};
      continue;
    }
    int64_t lendable = std::max<int64_t>(0, others_left);
    if (q.borrowing_limit_milli >= 0) lendable = std::min(lendable, q.borrowing_limit_milli);
    const int64_t over = want - q.nominal_milli - lendable;
    if (over > 0) return {false, over, k};
    borrows = true;
  }
  return {.borrows = borrows};
}

bool QuotaLedger::may_reclaim_for(const SnapshotJob& job,
                                  std::span<const Assignment> placement) const {
  if (!has_quotas_ || job.team < 0) return false;
  delta(placement, &scratch_);
  bool limited = false;
  for (int k = 0; k < keys_; ++k) {
    const QuotaEntry q = quota(job.team, k);
    if (scratch_[k] <= 0 || q.nominal_milli < 0) continue;
    limited = true;
    if (usage(job.team, k) + scratch_[k] > q.nominal_milli) return false;
  }
  return limited;
}

bool QuotaLedger::has_nominal(int team) const {
  if (!has_quotas_ || team < 0) return false;
  for (int k = 0; k < keys_; ++k) {
    if (quota(team, k).nominal_milli >= 0) return true;
  }
  return false;
}

bool QuotaLedger::borrowing(int team) const {
  if (!has_quotas_ || team < 0) return false;
  for (int k = 0; k < keys_; ++k) {
    const QuotaEntry q = quota(team, k);
    if (q.nominal_milli >= 0 && usage(team, k) > q.nominal_milli) return true;
  }
  return false;
}

bool QuotaLedger::within_nominal_after(const SnapshotJob& job,
                                       std::span<const Assignment> placement) const {
  if (!has_quotas_ || job.team < 0) return false;
  delta(placement, &scratch_);
  for (int k = 0; k < keys_; ++k) {
    const QuotaEntry q = quota(job.team, k);
    if (scratch_[k] > 0 && q.nominal_milli >= 0 &&
        usage(job.team, k) + scratch_[k] > q.nominal_milli) {
      return false;
    }
  }
  return true;
}

double QuotaLedger::dominant_share(int team) const {
  if (team < 0) return 0;
  double share = 0;
  for (int k = 0; k < keys_ - 1; ++k) {
    if (capacity_[k] > 0) {
      share =
          std::max(share, static_cast<double>(usage(team, k)) / static_cast<double>(capacity_[k]));
    }
  }
  const double w = snap_->teams[team].weight;
  return w > 0 ? share / w : share;
}

}  // namespace trainyard::sched
