#include "sched/start_estimate.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "sched/gpu_holders.h"
#include "sched/plan.h"

namespace trainyard::sched {
namespace {

std::string join_jobs(const std::vector<JobId>& ids, size_t max_named = 3) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < max_named; ++i)
    out += fmt::format("{}job {}", i == 0 ? "" : ", ", ids[i].value());
  if (ids.size() > max_named) out += fmt::format(" and {} more", ids.size() - max_named);
  return out;
}

// The cluster played forward: jobs leave at their expected ends, plan() fills what they free.
class Replay {
 public:
  explicit Replay(const Snapshot& snap) : sim_(snap) {
    sim_.arrival_order.clear();  // jobs leave; plan() sorts instead
    for (const SnapshotJob& j : sim_.jobs) {
      if (j.is_running()) ends_[j.id.value()] = expected_end(j, sim_.now);
    }
  }

  // Carries out a plan made at now(): starts run from now, victims leave at once.
  void apply(const Plan& p) {
    std::unordered_map<int64_t, int> index;
    for (size_t idx = 0; idx < sim_.jobs.size(); ++idx)
      index[sim_.jobs[idx].id.value()] = static_cast<int>(idx);
    for (const StartAction& s : p.starts) {
      SnapshotJob& j = sim_.jobs[index.at(s.job.value())];
      j.phase = JobPhase::Running;
      j.started = sim_.now;
      j.placement = s.placement;
      ends_[j.id.value()] = expected_end(j, sim_.now);
    }
    std::vector<JobId> victims;
    for (const PreemptAction& pr : p.preemptions) {
      SnapshotJob& j = sim_.jobs[index.at(pr.job.value())];
      if (!j.is_running()) continue;
      j.phase = JobPhase::Pending;
      j.last_run = sim_.now - j.started;
      j.queued_since = sim_.now;
      j.placement.clear();
      ends_.erase(j.id.value());
      victims.push_back(j.id);
    }
    if (!victims.empty()) cause_ = "after preempting " + join_jobs(victims);
  }

  // Moves to the next expected end and removes the jobs that end then; false when no running
  // job has a bounded end.
  bool advance() {
    Time next = Time::max();
    for (const auto& [id, end] : ends_) next = std::min(next, end);
    if (next == Time::max()) return false;
    sim_.now = std::max(sim_.now, next);
    std::vector<JobId> stopped, limited;  // being preempted; at their limit (or known end)
    std::erase_if(sim_.jobs, [&](const SnapshotJob& j) {
      auto it = ends_.find(j.id.value());
      if (it == ends_.end() || it->second > sim_.now) return false;
      (j.phase == JobPhase::Preempting ? stopped : limited).push_back(j.id);
      ends_.erase(it);
      return true;
    });
    std::sort(stopped.begin(), stopped.end());
    std::sort(limited.begin(), limited.end());
    cause_.clear();
    if (!stopped.empty())
      cause_ = fmt::format("after {} stop{} (preempted)", join_jobs(stopped),
                           stopped.size() == 1 ? "s" : "");
    if (!limited.empty())
      cause_ += fmt::format("{}{} {} by runtime limit", cause_.empty() ? "after " : " and ",
                            join_jobs(limited), limited.size() == 1 ? "ends" : "end");
    return true;
  }

  const Snapshot& sim() const { return sim_; }
  const std::string& cause() const { return cause_; }

 private:
  Snapshot sim_;
  std::unordered_map<int64_t, Time> ends_;  // running jobs by id
  std::string cause_;                       // what the last step changed, for `why`
};

// The replay's end state, and which of its running jobs never end there and stand in a waiting
// job's way: on nodes it could use, or (when it waits for quota) of its team.
class EndState {
 public:
  explicit EndState(const Snapshot& sim) : holders_(sim, no_plan_) {
    for (const SnapshotJob& j : sim.jobs) {
      by_id_[j.id.value()] = &j;
      if (j.is_running() && expected_end(j, sim.now) == Time::max())
        unbounded_of_team_[j.team].push_back(j.id);
    }
  }
  const SnapshotJob* find(JobId id) const {
    auto it = by_id_.find(id.value());
    return it == by_id_.end() ? nullptr : it->second;
  }
  std::vector<JobId> blockers(const SnapshotJob& job, bool quota) {
    if (quota) {
      auto it = unbounded_of_team_.find(job.team);
      return it == unbounded_of_team_.end() ? std::vector<JobId>{} : it->second;
    }
    std::vector<JobId> out;
    for (const GpuHolder& h : holders_.of(job)) {
      if (h.ends == Time::max()) out.push_back(h.job);
    }
    return out;
  }

 private:
  const Plan no_plan_;
  GpuHolders holders_;
  std::unordered_map<int64_t, const SnapshotJob*> by_id_;
  std::unordered_map<int, std::vector<JobId>> unbounded_of_team_;
};

std::string unknown_why(EndState& end, const WaitReason* w, JobId id, bool capped) {
  if (w != nullptr) {
    switch (w->code) {
      case WaitCode::DependencyUnfinished:
        return fmt::format("it waits for job {} to succeed first", w->arg);
      case WaitCode::NeverFits:
        return "it can never run on this cluster as requested";
      case WaitCode::BudgetExhausted:
        return "its team spent its budget for this period";
      case WaitCode::AwaitingNodes:
        return "it waits for new nodes, and when they come up is not known";
      default:
        break;
    }
  }
  const SnapshotJob* job = end.find(id);
  const bool quota = w != nullptr && w->code == WaitCode::QuotaExceeded;
  if (job != nullptr) {
    const std::vector<JobId> blockers = end.blockers(*job, quota);
    if (!blockers.empty())
      return fmt::format("{} held by {}, with no runtime limit (activeDeadlineSeconds)",
                         quota ? "its team's quota is" : "the GPUs it needs are",
                         join_jobs(blockers));
  }
  if (capped) return "it starts later than the expected job ends looked at";
  return "no running job has a runtime limit that frees what it needs";
}

// The last word on each estimate: the reservation's time for the job holding it, and for jobs
// no replayed plan started, why (from `last`, the last plan made, and the replay's end state).
void settle(std::vector<StartEstimate>& out, const Reservation& reservation, const Plan& last,
            const Snapshot& end_state, bool capped) {
  std::unordered_map<int64_t, const WaitReason*> last_wait;
  for (const WaitReason& w : last.waiting) last_wait[w.job.value()] = &w;
  EndState end(end_state);
  for (StartEstimate& e : out) {
    if (e.basis == EstimateBasis::Unknown) {
      auto it = last_wait.find(e.job.value());
      e.why = unknown_why(end, it == last_wait.end() ? nullptr : it->second, e.job, capped);
    } else if (e.job == reservation.job) {
      e.basis = EstimateBasis::Reservation;
      e.at = reservation.at;
      e.why = "backfill reservation: its GPUs are held for it " + e.why;
    }
  }
}

}  // namespace

std::string_view estimate_basis_name(EstimateBasis b) {
  switch (b) {
    case EstimateBasis::Reservation:
      return "reservation";
    case EstimateBasis::Replay:
      return "replay";
    case EstimateBasis::Unknown:
      return "unknown";
  }
  return "unknown";
}

std::vector<StartEstimate> estimate_starts(const Snapshot& snap, const Plan& plan,
                                           const PolicyConfig& cfg, const EstimateOptions& opts) {
  std::vector<StartEstimate> out;
  std::unordered_map<int64_t, size_t> open;  // job id -> index into out, while unresolved
  for (const WaitReason& w : plan.waiting) {
    open.emplace(w.job.value(), out.size());
    out.push_back({.job = w.job});
  }
  Replay replay(snap);
  replay.apply(plan);
  bool again = !plan.preemptions.empty();  // victims left: plan at once, the time stays
  Plan latest;
  bool ran = false;
  int replans = 0;
  for (; replans < opts.max_replans && !open.empty(); ++replans) {
    if (!again && !replay.advance()) break;
    latest = sched::plan(replay.sim(), cfg, opts.seed);
    ran = true;
    for (const StartAction& s : latest.starts) {
      auto it = open.find(s.job.value());
      if (it == open.end()) continue;
      out[it->second] = {s.job, EstimateBasis::Replay, replay.sim().now, replay.cause()};
      open.erase(it);
    }
    replay.apply(latest);
    again = !latest.preemptions.empty();
  }
  settle(out, plan.reservation, ran ? latest : plan, replay.sim(), replans >= opts.max_replans);
  return out;
}

}  // namespace trainyard::sched
