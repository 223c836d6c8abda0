#include "server/start_estimates.h"

#include <unordered_map>

#include "sched/gpu_holders.h"
#include "sched/start_estimate.h"

namespace trainyard::server {
namespace {

// Estimates older than this are worked out again even when no job came, left or started.
constexpr util::Duration kEstimateRefresh = std::chrono::seconds(2);

}  // namespace

void StartEstimator::explain(std::map<util::JobId, ActiveJob>& active, const sched::Snapshot& snap,
                             const sched::Plan& plan, const sched::PolicyConfig& cfg) {
  sched::GpuHolders holders(snap, plan);
  for (const auto& w : plan.waiting) {
    auto it = active.find(w.job);
    if (it == active.end()) continue;
    std::string reason = sched::describe(w, snap);
    if (sched::waits_for_gpus(w)) {
      if (std::string held = holders.describe(w.job); !held.empty()) reason += "; " + held;
    }
    it->second.wait_reason = std::move(reason);
  }
  const bool changed = !plan.starts.empty() || !plan.preemptions.empty() ||
                       snap.jobs.size() != last_jobs_ || snap.now - last_ >= kEstimateRefresh;
  if (!changed) return;
  last_ = snap.now;
  last_jobs_ = snap.jobs.size();
  std::unordered_map<int64_t, sched::StartEstimate> by_job;
  for (auto& e : sched::estimate_starts(snap, plan, cfg)) by_job[e.job.value()] = std::move(e);
  for (auto& [id, job] : active) {
    if (job.rec.state != model::JobState::Pending) continue;
    auto it = by_job.find(id.value());
    if (it != by_job.end()) {
      job.start_estimate = std::move(it->second);
    } else {
      job.start_estimate = sched::StartEstimate{.job = id, .why = job.wait_reason};
    }
  }
}

std::optional<model::StartEstimateView> start_estimate_view(const ActiveJob& job) {
  if (!job.start_estimate || job.rec.state != model::JobState::Pending) return std::nullopt;
  const sched::StartEstimate& e = *job.start_estimate;
  return model::StartEstimateView{.at = e.basis == sched::EstimateBasis::Unknown
                                            ? std::nullopt
                                            : std::optional(util::format_time(e.at)),
                                  .basis = std::string(sched::estimate_basis_name(e.basis)),
                                  .reason = e.why};
}

}  // namespace trainyard::server
