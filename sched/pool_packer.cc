#include "sched/internal/pool_packer.h"

#include <algorithm>

#include "sched/internal/node_filter.h"

namespace trainyard::sched::internal {
namespace {

bool wants_gpu(const model::WorkerRequest& w) {
  return w.gpus > 0 || w.gpu_milli.value() > 0 || !w.mig_profile.empty();
}

}  // namespace

PoolPacker::PoolPacker(const Snapshot& snap, const SnapshotPool& pool) : pool_(&pool) {
  if (pool.gpu_model >= 0 && pool.gpu_model < static_cast<int>(snap.accelerators.size())) {
    accel_ = snap.accelerators[pool.gpu_model];
  }
  nodes_.assign(std::max(pool.provisioning, 0), empty_node(/*bought=*/false));
}

VirtualNode PoolPacker::empty_node(bool bought) const {
  VirtualNode n;
  n.cpu = pool_->cpu;
  n.memory = pool_->memory;
  const int gpus = std::clamp(pool_->gpus_per_node, 0, model::kMaxGpusPerNode);
  for (int gpu_idx = 0; gpu_idx < gpus; ++gpu_idx) n.milli_free[gpu_idx] = model::kMilliPerGpu;
  n.bought = bought;
  return n;
}

void PoolPacker::add_bought(int count) {
  for (int k = 0; k < count; ++k) nodes_.push_back(empty_node(/*bought=*/true));
}

void PoolPacker::add_idle(int node_idx) {
  VirtualNode n = empty_node(/*bought=*/false);
  n.node_idx = node_idx;
  // Idle nodes first: packing prefers what is already paid for.
  nodes_.insert(nodes_.begin(), n);
}

std::vector<int> PoolPacker::used_idle_nodes() const {
  std::vector<int> out;
  for (const VirtualNode& n : nodes_) {
    if (n.node_idx >= 0 && n.used) out.push_back(n.node_idx);
  }
  return out;
}

const model::MigProfile* PoolPacker::mig_profile(const std::string& name) const {
  if (accel_ == nullptr) return nullptr;
  for (const model::MigProfile& p : accel_->mig_profiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool PoolPacker::worker_fits_shape(const SnapshotJob& job) const {
  const model::WorkerRequest& w = job.worker;
  if (wants_gpu(w)) {
    // Nodes with more GPUs than the scheduler's per-node arrays hold are not bought for jobs.
    if (pool_->gpu_model < 0 || pool_->gpus_per_node <= 0 ||
        pool_->gpus_per_node > model::kMaxGpusPerNode) {
      return false;
    }
    if (!model_allowed(job, pool_->gpu_model)) return false;
    if (!w.mig_profile.empty()) {
      if (!pool_->mig_enabled || mig_profile(w.mig_profile) == nullptr) return false;
    } else if (pool_->mig_enabled) {
      return false;  // MIG nodes offer only MIG instances
    }
  }
  VirtualNode empty = empty_node(false);
  return place_worker(job, empty);
}

// First fit of one worker on `node`; takes what it uses.
bool PoolPacker::place_worker(const SnapshotJob& job, VirtualNode& node) const {
  const model::WorkerRequest& w = job.worker;
  if (w.cpu > node.cpu || w.memory > node.memory) return false;
  const int gpus = std::clamp(pool_->gpus_per_node, 0, model::kMaxGpusPerNode);
  if (w.gpus > 0) {
    std::vector<int> free;
    for (int gpu_idx = 0; gpu_idx < gpus && static_cast<int>(free.size()) < w.gpus; ++gpu_idx) {
      if (node.milli_free[gpu_idx] == model::kMilliPerGpu) free.push_back(gpu_idx);
    }
    if (static_cast<int>(free.size()) < w.gpus) return false;
    for (int gpu_idx : free) node.milli_free[gpu_idx] = 0;
  } else if (!w.mig_profile.empty()) {
    const model::MigProfile* p = mig_profile(w.mig_profile);
    if (p == nullptr) return false;
    bool placed = false;
    for (int gpu_idx = 0; gpu_idx < gpus && !placed; ++gpu_idx) {
      for (int start = 0; start < model::kMigMemorySlices && !placed; ++start) {
        if (!((p->start_mask >> start) & 1) || (node.mig_used[gpu_idx] & p->slot_bits(start))) {
          continue;
        }
        node.mig_used[gpu_idx] |= p->slot_bits(start);
        placed = true;
      }
    }
    if (!placed) return false;
  } else if (w.gpu_milli.value() > 0) {
    auto* gpu = std::find_if(node.milli_free.begin(), node.milli_free.begin() + gpus,
                             [&](int16_t free) { return free >= w.gpu_milli.value(); });
    if (gpu == node.milli_free.begin() + gpus) return false;
    *gpu = static_cast<int16_t>(*gpu - w.gpu_milli.value());
  }
  node.cpu -= w.cpu;
  node.memory -= w.memory;
  return true;
}

PackResult PoolPacker::pack(const SnapshotJob& job, int max_new) {
  tentative_ = nodes_;
  PackResult result;
  for (int worker = 0; worker < job.workers; ++worker) {
    bool placed = false;
    for (VirtualNode& node : tentative_) {
      if (place_worker(job, node)) {
        placed = true;
        node.used = true;
        result.on_bought = result.on_bought || node.bought;
        result.on_coming = result.on_coming || node.node_idx < 0;
        break;
      }
    }
    if (placed) continue;
    if (result.new_nodes == max_new) return {};
    VirtualNode node = empty_node(/*bought=*/true);
    if (!place_worker(job, node)) return {};
    node.used = true;
    tentative_.push_back(node);
    ++result.new_nodes;
    result.on_bought = true;
    result.on_coming = true;
  }
  result.fits = true;
  return result;
}

}  // namespace trainyard::sched::internal
