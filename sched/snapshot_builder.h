// Builds Snapshot pieces from model types: interns GPU model names and racks, turns allowed
// models into bit masks and quotas into per-model entries. Used by the simulator, the server
// and tests, so every driver builds snapshots the same way. Add pools, then nodes, then teams:
// a node finds its pool by name, and quotas are resolved against the GPU models the pools and
// nodes brought (quotas for other models are dropped).
#pragma once

#include <string_view>

#include "model/job.h"
#include "model/node.h"
#include "model/team.h"
#include "sched/snapshot.h"

namespace trainyard::sched {

inline constexpr int kMaxGpuModels = 63;
// Mask bit that no GPU model has: a job allowed only models absent from the cluster.
inline constexpr uint64_t kNoModelBit = uint64_t{1} << 63;

int intern_gpu_model(Snapshot& snap, std::string_view name);
int intern_rack(Snapshot& snap, std::string_view name);
// The pool's SnapshotPool (index returned). ready, provisioning, unavailable_until and the
// zones' blocked_until are left for the driver to keep.
int add_pool(Snapshot& snap, const model::Pool& pool);
// Sets SnapshotNode::pool (and spot) when a pool named node.pool was added before. The node is
// taken as idle since snap.now (set `now` first): the builder sees no jobs, the autoscaler
// ignores idle_since on nodes that hold jobs, and drivers that track idleness overwrite it.
void add_node(Snapshot& snap, const model::Node& node);
// budget_left stays infinite: drivers set it from the team's spend in its budget period.
void add_team(Snapshot& snap, const model::Team& team);
int find_pool(const Snapshot& snap, std::string_view name);
int find_team(const Snapshot& snap, std::string_view name);
uint64_t gpu_model_mask(const Snapshot& snap, const std::vector<std::string>& allowed);
// A pending job for `spec`; team resolved by name (-1 if unknown).
SnapshotJob make_pending_job(const Snapshot& snap, JobId id, const model::JobSpec& spec,
                             Time submitted);

}  // namespace trainyard::sched
