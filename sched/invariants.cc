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

}  // namespace

util::Status check_plan(const Snapshot& snap, const Plan& plan, bool quota_enforced) {
  std::unordered_map<int64_t, int> index;
  for (size_t i = 0; i < snap.jobs.size(); ++i)
    index[snap.jobs[i].id.value()] = static_cast<int>(i);
  std::vector<NodeUse> use(snap.nodes.size());
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
    TY_RETURN_IF_ERROR(check_gang(job, s.placement));
    TY_RETURN_IF_ERROR(add_use(snap, use, job, s.placement));
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
    if (!seen.insert(p.job.value()).second)
      return util::internal_error(fmt::format("job {} preempted twice or started", p.job.value()));
  }
  return util::Status::ok();
}

}  // namespace trainyard::sched
