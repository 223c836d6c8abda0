#include "sim/occupancy.h"

#include <fmt/format.h>

#include "drive/cost_share.h"

namespace trainyard::sim {

Occupancy::Occupancy(const sched::Snapshot& snap) : snap_(&snap), nodes_(snap.nodes.size()) {
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    nodes_[i].milli.assign(snap.nodes[i].gpu_count, 0);
    nodes_[i].mig.assign(snap.nodes[i].gpu_count, 0);
    capacity_milli_ += int64_t{snap.nodes[i].gpu_count} * model::kMilliPerGpu;
  }
}

void Occupancy::add_node(int idx) {
  if (static_cast<size_t>(idx) >= nodes_.size()) nodes_.resize(idx + 1);
  const int gpus = snap_->nodes[idx].gpu_count;
  nodes_[idx] = NodeUse{};
  nodes_[idx].milli.assign(gpus, 0);
  nodes_[idx].mig.assign(gpus, 0);
  capacity_milli_ += int64_t{gpus} * model::kMilliPerGpu;
}

void Occupancy::remove_node(int idx) {
  capacity_milli_ -= static_cast<int64_t>(nodes_[idx].milli.size()) * model::kMilliPerGpu;
  nodes_[idx] = NodeUse{};
}

int64_t Occupancy::share(const sched::Assignment& a) const {
  return drive::held_milli(*snap_, a);
}

util::Status Occupancy::take(const sched::SnapshotJob& job,
                             const std::vector<sched::Assignment>& placement) {
  const int per_worker = job.worker.gpus > 0 ? job.worker.gpus : 1;
  std::vector<int> count(job.workers, 0);
  std::vector<int> node_of(job.workers, -1);
  for (const auto& a : placement) {
    if (a.worker < 0 || a.worker >= job.workers || ++count[a.worker] > per_worker ||
        (node_of[a.worker] >= 0 && node_of[a.worker] != a.node_idx)) {
      return util::internal_error(fmt::format("job {}: malformed gang placement", job.id.value()));
    }
    node_of[a.worker] = a.node_idx;
  }
  for (int c : count) {
    if (c != per_worker)
      return util::internal_error(fmt::format("job {}: gang not whole", job.id.value()));
  }
  for (int w = 0; w < job.workers; ++w) {
    NodeUse& u = nodes_[node_of[w]];
    u.cpu += job.worker.cpu.value();
    u.memory += job.worker.memory.value();
    const auto& n = snap_->nodes[node_of[w]];
    if (u.cpu > n.cpu.value() || u.memory > n.memory.value()) {
      return util::internal_error(
          fmt::format("job {}: CPU or memory of {} over-committed", job.id.value(), n.name));
    }
  }
  for (const auto& a : placement) {
    if (a.gpu_idx < 0) continue;
    NodeUse& u = nodes_[a.node_idx];
    if (a.mig_profile >= 0) {
      const auto* accel = snap_->accelerators[snap_->nodes[a.node_idx].gpu_model];
      const uint8_t bits = accel->mig_profiles[a.mig_profile].slot_bits(a.mig_start);
      if (u.mig[a.gpu_idx] & bits) {
        return util::internal_error(fmt::format("job {}: MIG slice given twice", job.id.value()));
      }
      u.mig[a.gpu_idx] = static_cast<uint8_t>(u.mig[a.gpu_idx] | bits);
    } else {
      u.milli[a.gpu_idx] = static_cast<int16_t>(u.milli[a.gpu_idx] + a.milli);
      if (u.milli[a.gpu_idx] > model::kMilliPerGpu) {
        return util::internal_error(fmt::format("job {}: GPU {} of {} given twice", job.id.value(),
                                                a.gpu_idx, snap_->nodes[a.node_idx].name));
      }
    }
    allocated_milli_ += share(a);
  }
  return util::Status::ok();
}

void Occupancy::give_back(const sched::SnapshotJob& job,
                          const std::vector<sched::Assignment>& placement) {
  int last_worker = -1;
  for (const auto& a : placement) {
    NodeUse& u = nodes_[a.node_idx];
    if (a.worker != last_worker) {
      u.cpu -= job.worker.cpu.value();
      u.memory -= job.worker.memory.value();
      last_worker = a.worker;
    }
    if (a.gpu_idx < 0) continue;
    if (a.mig_profile >= 0) {
      const auto* accel = snap_->accelerators[snap_->nodes[a.node_idx].gpu_model];
      u.mig[a.gpu_idx] = static_cast<uint8_t>(
          u.mig[a.gpu_idx] & ~accel->mig_profiles[a.mig_profile].slot_bits(a.mig_start));
    } else {
      u.milli[a.gpu_idx] = static_cast<int16_t>(u.milli[a.gpu_idx] - a.milli);
    }
    allocated_milli_ -= share(a);
  }
}

}  // namespace trainyard::sim
