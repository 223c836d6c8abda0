#include "sched/cluster_state.h"

#include <algorithm>

#include "util/status.h"

namespace trainyard::sched {
namespace {
constexpr int kLevels = model::kMaxGpusPerNode + 1;

// A GPU partly taken by fractional shares.
bool shared(int16_t milli_free) {
  return milli_free > 0 && milli_free < model::kMilliPerGpu;
}
}  // namespace

ClusterState::ClusterState(const Snapshot& snap)
    : snap_(&snap),
      free_(snap.nodes.size()),
      buckets_(snap.gpu_models.size() * kLevels),
      pos_(snap.nodes.size(), -1) {
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    const SnapshotNode& n = snap.nodes[i];
    TY_CHECK(n.gpu_count >= 0 && n.gpu_count <= model::kMaxGpusPerNode);
    NodeFree& f = free_[i];
    f.cpu = model::CpuMilli(std::max<int64_t>(0, n.cpu.value() - n.cpu_held_outside.value()));
    f.memory = model::Bytes(std::max<int64_t>(0, n.memory.value() - n.memory_held_outside.value()));
    f.whole_free = n.mig_enabled ? 0 : n.gpu_count;
    for (int g = 0; g < n.gpu_count; ++g) {
      const bool held = (n.gpus_held_outside >> g) & 1u;
      f.gpu_milli_free[g] = held ? int16_t{0} : static_cast<int16_t>(model::kMilliPerGpu);
      if (held && !n.mig_enabled) --f.whole_free;
    }
    if (n.mig_enabled) mig_nodes_.push_back(static_cast<int32_t>(i));
  }
  for (const SnapshotJob& job : snap.jobs) {
    if (job.is_running()) change(job.placement, job.worker, -1);
  }
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    if (indexed(static_cast<int>(i))) bucket_insert(static_cast<int>(i));
  }
}

bool ClusterState::indexed(int node_idx) const {
  const SnapshotNode& n = snap_->nodes[node_idx];
  return n.schedulable && !n.mig_enabled && n.gpu_model >= 0 && n.gpu_count > 0;
}

std::span<const int32_t> ClusterState::bucket(int gpu_model, int whole_free) const {
  return buckets_[gpu_model * kLevels + whole_free];
}

void ClusterState::bucket_remove(int node_idx) {
  auto& b = buckets_[snap_->nodes[node_idx].gpu_model * kLevels + free_[node_idx].whole_free];
  const int32_t at = pos_[node_idx];
  b[at] = b.back();
  pos_[b[at]] = at;
  b.pop_back();
  pos_[node_idx] = -1;
}

void ClusterState::bucket_insert(int node_idx) {
  auto& b = buckets_[snap_->nodes[node_idx].gpu_model * kLevels + free_[node_idx].whole_free];
  pos_[node_idx] = static_cast<int32_t>(b.size());
  b.push_back(node_idx);
}

void ClusterState::update_shared(int node_idx) {
  const NodeFree& f = free_[node_idx];
  bool any = false;
  for (int g = 0; g < snap_->nodes[node_idx].gpu_count; ++g)
    any = any || shared(f.gpu_milli_free[g]);
  auto it = std::lower_bound(shared_gpu_nodes_.begin(), shared_gpu_nodes_.end(), node_idx);
  const bool listed = it != shared_gpu_nodes_.end() && *it == node_idx;
  if (any && !listed) shared_gpu_nodes_.insert(it, node_idx);
  if (!any && listed) shared_gpu_nodes_.erase(it);
}

void ClusterState::apply(std::span<const Assignment> placement,
                         const model::WorkerRequest& worker) {
  change(placement, worker, -1);
}

void ClusterState::release(std::span<const Assignment> placement,
                           const model::WorkerRequest& worker) {
  change(placement, worker, +1);
}

void ClusterState::change(std::span<const Assignment> placement, const model::WorkerRequest& worker,
                          int sign) {
  int32_t last_worker = -1;
  int32_t last_node = -1;
  bool reindex = false;
  for (size_t i = 0; i < placement.size(); ++i) {
    const Assignment& a = placement[i];
    // A run of assignments on one node leaves the node's bucket once and enters its final one
    // once: the same bucket order as moving it per assignment (it would sit last in between).
    if (i == 0 || placement[i - 1].node_idx != a.node_idx) {
      reindex = pos_[a.node_idx] >= 0;
      if (reindex) bucket_remove(a.node_idx);
    }
    NodeFree& f = free_[a.node_idx];
    if (a.worker != last_worker || a.node_idx != last_node) {
      f.cpu += worker.cpu * sign;
      f.memory += worker.memory * sign;
      last_worker = a.worker;
      last_node = a.node_idx;
    }
    if (a.gpu_idx >= 0) {
      int16_t& milli = f.gpu_milli_free[a.gpu_idx];
      if (a.mig_profile >= 0) {
        const auto* accel = snap_->accelerators[snap_->nodes[a.node_idx].gpu_model];
        const uint8_t bits = accel->mig_profiles[a.mig_profile].slot_bits(a.mig_start);
        f.mig_used[a.gpu_idx] = sign < 0 ? static_cast<uint8_t>(f.mig_used[a.gpu_idx] | bits)
                                         : static_cast<uint8_t>(f.mig_used[a.gpu_idx] & ~bits);
      } else {
        const bool was_whole = milli == model::kMilliPerGpu;
        const bool was_shared = shared(milli);
        milli = static_cast<int16_t>(milli + sign * a.milli);
        const bool is_whole = milli == model::kMilliPerGpu;
        TY_CHECK_MSG(milli >= 0 && milli <= model::kMilliPerGpu, "GPU over- or under-committed");
        if (!snap_->nodes[a.node_idx].mig_enabled)
          f.whole_free += (is_whole ? 1 : 0) - (was_whole ? 1 : 0);
        if (shared(milli) != was_shared) update_shared(a.node_idx);
      }
    }
    const bool run_ends = i + 1 == placement.size() || placement[i + 1].node_idx != a.node_idx;
    if (run_ends && (reindex || (sign > 0 && indexed(a.node_idx) && pos_[a.node_idx] < 0))) {
      bucket_insert(a.node_idx);
    }
  }
}

bool ClusterState::is_free(const Assignment& a) const {
  if (a.gpu_idx < 0) return true;
  const NodeFree& f = free_[a.node_idx];
  if (a.mig_profile >= 0) {
    const auto* accel = snap_->accelerators[snap_->nodes[a.node_idx].gpu_model];
    return (f.mig_used[a.gpu_idx] & accel->mig_profiles[a.mig_profile].slot_bits(a.mig_start)) == 0;
  }
  return f.gpu_milli_free[a.gpu_idx] >= a.milli;
}

std::vector<Assignment> ClusterState::hold_free(std::span<const Assignment> placement) {
  static const model::WorkerRequest kNoResources;
  std::vector<Assignment> held;
  for (const Assignment& a : placement) {
    if (a.gpu_idx < 0 || !is_free(a)) continue;
    apply(std::span<const Assignment>(&a, 1), kNoResources);
    held.push_back(a);
  }
  return held;
}

}  // namespace trainyard::sched
