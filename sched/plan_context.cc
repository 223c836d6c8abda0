#include "sched/internal/plan_context.h"

#include <functional>

namespace trainyard::sched::internal {

size_t ShapeHash::operator()(const Shape& s) const {
  size_t h = std::hash<int64_t>()(s.milli);
  auto mix = [&h](uint64_t v) {
    h ^= std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  mix(static_cast<uint64_t>(s.gpus));
  mix(static_cast<uint64_t>(s.workers));
  mix(static_cast<uint64_t>(s.cpu));
  mix(static_cast<uint64_t>(s.memory));
  mix(s.model_mask);
  mix(s.mig_and_selector_hash);
  mix(static_cast<uint64_t>(s.preemptible));
  return h;
}

Shape shape_of(const SnapshotJob& job) {
  size_t h = std::hash<std::string>()(job.worker.mig_profile);
  for (const auto& [k, v] : job.node_selector) {
    h = h * 31 + std::hash<std::string>()(k);
    h = h * 31 + std::hash<std::string>()(v);
  }
  return {job.worker.gpus,
          job.workers,
          job.worker.gpu_milli.value(),
          job.worker.cpu.value(),
          job.worker.memory.value(),
          job.gpu_model_mask,
          h,
          job.preemptible};
}

PlanContext::PlanContext(const Snapshot& s, const PolicyConfig& c, const PolicyTraits& t)
    : snap(s),
      cfg(c),
      traits(t),
      state(s),
      ledger(s, t.order == QueueOrderKind::DominantShare),
      selectors(s),
      mig_profiles(s),
      rank_of(s.jobs.size(), INT32_MAX),
      condemned(s.jobs.size(), 0) {}

void PlanContext::start(int job_idx, std::vector<Assignment> placement) {
  const SnapshotJob& job = snap.jobs[job_idx];
  started_idx.push_back(job_idx);
  state.apply(placement, job.worker);
  ledger.add(job, placement, +1);
  plan.starts.push_back({job.id, std::move(placement)});
}

}  // namespace trainyard::sched::internal
