// The per-node tests that placement shares: whether a job may use a node at all, and how many
// of its workers the node's free CPU and memory hold. Internal to sched/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "sched/placement.h"

namespace trainyard::sched::internal {

inline bool model_allowed(const SnapshotJob& job, int gpu_model) {
  return job.gpu_model_mask == 0 || (gpu_model >= 0 && ((job.gpu_model_mask >> gpu_model) & 1));
}

// A job that is not preemptible never runs on spot capacity: a reclaim would kill it.
inline bool spot_ok(const SnapshotJob& job, const SnapshotNode& n) {
  return job.preemptible || !n.spot;
}

// The MIG profile `profile` of the node's GPU model (its index in *index), or nullptr.
const model::MigProfile* mig_profile_on(const Snapshot& snap, const SnapshotNode& n,
                                        const std::string& profile, int* index);
// The same, from opts.mig_profile_by_model when set (it must be for `profile`).
inline const model::MigProfile* mig_profile_on(const Snapshot& snap, const SnapshotNode& n,
                                               const std::string& profile, const PlaceOptions& opts,
                                               int* index) {
  if (opts.mig_profile_by_model == nullptr) return mig_profile_on(snap, n, profile, index);
  if (n.gpu_model < 0) return nullptr;
  const int i = (*opts.mig_profile_by_model)[n.gpu_model];
  if (i < 0) return nullptr;
  if (index) *index = i;
  return &snap.accelerators[n.gpu_model]->mig_profiles[i];
}

// Whether node `idx` (that is, `n`) matches the job's node selector.
inline bool selector_ok(const SnapshotJob& job, const SnapshotNode& n, int idx,
                        const PlaceOptions& opts) {
  if (job.node_selector.empty()) return true;
  if (opts.selector_matches != nullptr) return (*opts.selector_matches)[idx];
  return model::selector_matches(job.node_selector, n.labels);
}

// Requirements node `idx` must meet whatever runs on it: 0, or the FilterBit that fails.
uint8_t static_mismatch(const SnapshotJob& job, const Snapshot& snap, int idx,
                        const PlaceOptions& opts);

namespace detail {
// At most `limit` workers, as many as `have` holds at `per` each. Divides only when `have`
// binds: most nodes take the whole limit or none.
inline int64_t capped(int64_t per, int64_t have, int64_t limit) {
  int64_t need = 0;
  if (per <= 0 || (!__builtin_mul_overflow(per, limit, &need) && need <= have)) return limit;
  return have < per ? 0 : std::min(limit, have / per);
}
}  // namespace detail

// At most `limit` workers, as many as `cpu` and `memory` hold at the worker's request each.
inline int64_t workers_by_resources(const model::WorkerRequest& w, model::CpuMilli cpu,
                                    model::Bytes memory, int64_t limit) {
  limit = detail::capped(w.cpu.value(), cpu.value(), limit);
  limit = detail::capped(w.memory.value(), memory.value(), limit);
  return std::max<int64_t>(limit, 0);
}

}  // namespace trainyard::sched::internal
