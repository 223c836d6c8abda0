#include "sched/invariants.h"

#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "model/node.h"
#include "sched/admission.h"

namespace trainyard::sched {
namespace {

struct NodeUse {
  int64_t cpu = 0;
  int64_t memory = 0;
  std::array<int32_t, model::kMaxGpusPerNode> milli{};
  std::array<uint8_t, model::kMaxGpusPerNode> mig{};
};

util::Status add_use(const Snapshot& snap, std::vector<NodeUse>& use, const SnapshotJob& job,
                     const std::vector<Assignment>& placement) {
  std::unordered_set<int64_t> worker_nodes;
  for (const Assignment& a : placement) {
    if (a.node_idx < 0 || a.node_idx >= static_cast<int>(snap.nodes.size())) {
      return util::internal_error(
          fmt::format("job {}: node index {} out of range", job.id.value(), a.node_idx));
    }
    const SnapshotNode& n = snap.nodes[a.node_idx];
    NodeUse& u = use[a.node_idx];
    if (worker_nodes.insert(int64_t{a.worker} << 32 | a.node_idx).second) {
      u.cpu += job.worker.cpu.value();
      u.memory += job.worker.memory.value();
    }
    if (a.gpu_idx < 0) continue;
    if (a.gpu_idx >= n.gpu_count) {
      return util::internal_error(
          fmt::format("job {}: GPU {} does not exist on {}", job.id.value(), a.gpu_idx, n.name));
    }
    if (a.mig_profile >= 0) {
      const auto* accel = snap.accelerators[n.gpu_model];
      if (!n.mig_enabled || accel == nullptr ||
          a.mig_profile >= static_cast<int>(accel->mig_profiles.size())) {
        return util::internal_error(
            fmt::format("job {}: bad MIG assignment on {}", job.id.value(), n.name));
      }
      const auto& p = accel->mig_profiles[a.mig_profile];
      if (!((p.start_mask >> a.mig_start) & 1)) {
        return util::internal_error(fmt::format("job {}: MIG {} cannot start at slice {}",
                                                job.id.value(), p.name, a.mig_start));
      }
      const uint8_t bits = p.slot_bits(a.mig_start);
      if (u.mig[a.gpu_idx] & bits) {
        return util::internal_error(
            fmt::format("MIG slice given twice on {} GPU {}", n.name, a.gpu_idx));
      }
      u.mig[a.gpu_idx] |= bits;
    } else {
      if (n.mig_enabled)
        return util::internal_error(
            fmt::format("job {}: whole/fractional GPU on MIG node {}", job.id.value(), n.name));
      u.milli[a.gpu_idx] += a.milli;
      if (u.milli[a.gpu_idx] > model::kMilliPerGpu) {
        return util::internal_error(
            fmt::format("GPU {} of {} given twice (over 1000 milli)", a.gpu_idx, n.name));
      }
    }
  }
  return util::Status::ok();
}

util::Status check_gang(const SnapshotJob& job, const std::vector<Assignment>& placement) {
  const auto& w = job.worker;
  const int per_worker = w.gpus > 0 ? w.gpus : 1;
  std::vector<int> count(job.workers, 0);
  for (const Assignment& a : placement) {
    if (a.worker < 0 || a.worker >= job.workers) {
      return util::internal_error(
          fmt::format("job {}: worker {} out of range", job.id.value(), a.worker));
    }
    if (++count[a.worker] > per_worker) {
      return util::internal_error(
          fmt::format("job {}: worker {} got too many GPUs", job.id.value(), a.worker));
    }
    if (w.gpus > 0 && a.milli != model::kMilliPerGpu) {
      return util::internal_error(
          fmt::format("job {}: whole-GPU worker got a fraction", job.id.value()));
    }
    if (w.gpus == 0 && w.mig_profile.empty() && w.gpu_milli.value() > 0 &&
        a.milli != w.gpu_milli.value()) {
      return util::internal_error(
          fmt::format("job {}: fractional share differs from request", job.id.value()));
    }
  }
  for (int k = 0; k < job.workers; ++k) {
    if (count[k] != per_worker) {
      return util::internal_error(fmt::format("job {}: gang not whole: worker {} has {} of {} GPUs",
                                              job.id.value(), k, count[k], per_worker));
    }
  }
  // A worker's GPUs are on one node.
  std::unordered_map<int, int> node_of;
  for (const Assignment& a : placement) {
    auto [it, inserted] = node_of.emplace(a.worker, a.node_idx);
    if (!inserted && it->second != a.node_idx) {
      return util::internal_error(
          fmt::format("job {}: worker {} spans nodes", job.id.value(), a.worker));
    }
  }
  return util::Status::ok();
}

// Nobody who cannot be preempted runs where the cloud may reclaim the node.
util::Status check_spot(const Snapshot& snap, const SnapshotJob& job,
                        const std::vector<Assignment>& placement) {
  if (job.preemptible) return util::Status::ok();
  for (const Assignment& a : placement) {
    if (snap.nodes[a.node_idx].spot) {
      return util::internal_error(
          fmt::format("job {} is not preemptible but starts on spot node {}", job.id.value(),
                      snap.nodes[a.node_idx].name));
    }
  }
  return util::Status::ok();
}

// Scale-ups name autoscaled pools and real zones and stay within max_nodes; releases give back
// only nodes that no job holds or is started on, each once.
util::Status check_capacity_actions(const Snapshot& snap, const Plan& plan) {
  std::vector<int64_t> bought(snap.pools.size(), 0);
  for (const ScaleUpAction& s : plan.scale_ups) {
    if (s.pool < 0 || s.pool >= static_cast<int>(snap.pools.size()) ||
        !snap.pools[s.pool].autoscaled || s.nodes <= 0) {
      return util::internal_error(
          fmt::format("scale-up of {} nodes in pool {} which is not autoscaled", s.nodes, s.pool));
    }
    const SnapshotPool& pool = snap.pools[s.pool];
    if (s.zone < -1 || s.zone >= static_cast<int>(pool.zones.size())) {
      return util::internal_error(
          fmt::format("scale-up in pool {}: no zone {}", pool.name, s.zone));
    }
    bought[s.pool] += s.nodes;
    if (pool.ready + pool.provisioning + bought[s.pool] > pool.max_nodes) {
      return util::internal_error(
          fmt::format("pool {} scaled past max_nodes {}", pool.name, pool.max_nodes));
    }
  }
  std::vector<uint8_t> held(snap.nodes.size(), 0);
  for (const SnapshotJob& job : snap.jobs) {
    if (!job.is_running()) continue;
    for (const Assignment& a : job.placement) held[a.node_idx] = 1;
  }
  for (const StartAction& s : plan.starts) {
    for (const Assignment& a : s.placement) held[a.node_idx] = 1;
  }
  for (const ReleaseAction& r : plan.releases) {
    if (r.node_idx < 0 || r.node_idx >= static_cast<int>(snap.nodes.size())) {
      return util::internal_error(fmt::format("release of node index {}", r.node_idx));
    }
    if (held[r.node_idx] != 0) {
      return util::internal_error(
          fmt::format("release of node {} which a job holds, or was released twice",
                      snap.nodes[r.node_idx].name));
    }
    held[r.node_idx] = 2;
  }
  return util::Status::ok();
}

}  // namespace

util::Status check_plan(const Snapshot& snap, const Plan& plan, bool quota_enforced,
                        Duration min_runtime) {
  std::unordered_map<int64_t, int> index;
  for (size_t i = 0; i < snap.jobs.size(); ++i)
    index[snap.jobs[i].id.value()] = static_cast<int>(i);
  std::vector<NodeUse> use(snap.nodes.size());
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    const SnapshotNode& n = snap.nodes[i];
    use[i].cpu = n.cpu_held_outside.value();
    use[i].memory = n.memory_held_outside.value();
    for (int g = 0; g < n.gpu_count; ++g)
      if ((n.gpus_held_outside >> g) & 1u) use[i].milli[g] = model::kMilliPerGpu;
  }
  for (const SnapshotJob& job : snap.jobs) {
    if (job.is_running()) {
      if (auto s = add_use(snap, use, job, job.placement); !s.is_ok())
        return s.with_context("snapshot");
    }
  }
  std::unordered_set<int64_t> seen;
  QuotaLedger ledger(snap, /*derive_equal_shares=*/false);
  for (const StartAction& s : plan.starts) {
    auto it = index.find(s.job.value());
    if (it == index.end())
      return util::internal_error(fmt::format("start of unknown job {}", s.job.value()));
    const SnapshotJob& job = snap.jobs[it->second];
    if (job.is_running())
      return util::internal_error(fmt::format("job {} started twice", s.job.value()));
    if (!seen.insert(s.job.value()).second)
      return util::internal_error(fmt::format("job {} in two starts", s.job.value()));
    if (job.waiting_on != util::kNoJob)
      return util::internal_error(
          fmt::format("job {} started before its dependency", s.job.value()));
    SnapshotJob sized;  // an elastic start may pick its own number of workers
    if (s.workers > 0) {
      if (!job.elastic() || s.workers < job.min_workers || s.workers > job.max_workers) {
        return util::internal_error(fmt::format("job {} started with {} workers, outside its range",
                                                s.job.value(), s.workers));
      }
      sized = job;
      sized.workers = s.workers;
    }
    TY_RETURN_IF_ERROR(check_gang(s.workers > 0 ? sized : job, s.placement));
    TY_RETURN_IF_ERROR(add_use(snap, use, job, s.placement));
    TY_RETURN_IF_ERROR(check_spot(snap, job, s.placement));
    if (quota_enforced) {
      if (!ledger.check(job, s.placement).admitted) {
        return util::internal_error(
            fmt::format("job {} started over its team's quota", s.job.value()));
      }
      ledger.add(job, s.placement, +1);
    }
  }
  for (size_t n = 0; n < snap.nodes.size(); ++n) {
    if (use[n].cpu > snap.nodes[n].cpu.value() || use[n].memory > snap.nodes[n].memory.value()) {
      return util::internal_error(
          fmt::format("CPU or memory of {} over-committed", snap.nodes[n].name));
    }
  }
  for (const PreemptAction& p : plan.preemptions) {
    auto it = index.find(p.job.value());
    if (it == index.end() || snap.jobs[it->second].phase != JobPhase::Running) {
      return util::internal_error(
          fmt::format("preemption of job {} which is not running", p.job.value()));
    }
    if (!snap.jobs[it->second].preemptible) {
      return util::internal_error(fmt::format("job {} is not preemptible", p.job.value()));
    }
    if (snap.now - snap.jobs[it->second].started < min_runtime) {
      return util::internal_error(fmt::format(
          "job {} is preempted {:.0f} s after it started, before the minimum run time of {:.0f} s",
          p.job.value(), util::to_seconds(snap.now - snap.jobs[it->second].started),
          util::to_seconds(min_runtime)));
    }
    if (!seen.insert(p.job.value()).second)
      return util::internal_error(fmt::format("job {} preempted twice or started", p.job.value()));
  }
  return check_capacity_actions(snap, plan);
}

}  // namespace trainyard::sched
