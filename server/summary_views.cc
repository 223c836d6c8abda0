// GET /api/v1/summary: the numbers of the web UI's overview in one reply, so a page polling
// every few seconds costs one request: GPUs in use, free and allocated but idle; jobs by state;
// the queue and its waits; firing alerts; the spend today and the team budgets. A team token
// gets its own team's jobs, queue, alerts, spend and budget (GPU counts are the cluster's, as
// GET /api/v1/nodes shows them to every token).
#include <algorithm>
#include <chrono>

#include "server/control_plane.h"
#include "util/thread_annotations.h"
#include "util/time_text.h"

namespace trainyard::server {
namespace {

// A device holding a job counts as idle below this utilization (the job-gpu-idle alert's
// default threshold; see docs/alerts.md).
constexpr double kIdleBelowPercent = 5.0;

constexpr model::JobState kSummaryStates[] = {
    model::JobState::Pending, model::JobState::Admitted,   model::JobState::Placed,
    model::JobState::Running, model::JobState::Preempting, model::JobState::Succeeded,
    model::JobState::Failed,  model::JobState::Cancelled};

// Median of `v` (sorted here); nullopt when empty.
nlohmann::json median(std::vector<double> v) {
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// GPUs of the nodes that can run work (not still provisioning, not gone) from nodes().
nlohmann::json gpu_counts(const nlohmann::json& nodes, const nlohmann::json& gpus,
                          const Principal& who) {
  int64_t total = 0, in_use = 0, idle = 0;
  for (const auto& n : nodes["items"]) {
    const std::string state = n.value("state", "ready");
    if (state == "provisioning" || state == "gone") continue;
    total += n.value("gpus", int64_t{0});
    in_use += n.value("gpusInUse", int64_t{0});
  }
  for (const auto& d : gpus["items"]) {
    const auto& util = d["gpuUtilPercent"];
    if (d["jobs"].empty() || !util.is_number() || util.get<double>() >= kIdleBelowPercent) continue;
    const bool mine = std::any_of(d["jobs"].begin(), d["jobs"].end(), [&](const auto& j) {
      return who.may_access_team(j.value("team", std::string()));
    });
    idle += mine ? 1 : 0;
  }
  return {{"total", total},
          {"inUse", in_use},
          {"free", std::max<int64_t>(0, total - in_use)},
          {"idleAllocated", idle},
          {"idleBelowPercent", kIdleBelowPercent}};
}

nlohmann::json alert_counts(const nlohmann::json& alerts) {
  int64_t critical = 0, warning = 0, firing = 0;
  for (const auto& a : alerts["items"]) {
    if (a.value("state", "") != "firing") continue;
    ++firing;
    (a.value("severity", "") == "critical" ? critical : warning) += 1;
  }
  return {{"firing", firing}, {"critical", critical}, {"warning", warning}};
}

// The pending jobs' waits (seconds since queued) and how many of them are held.
struct QueueWaits {
  std::vector<double> waits;
  int64_t held = 0;
};

// Counts the jobs in memory by state into `jobs`, and the pending ones' waits.
void count_active(const std::map<util::JobId, ActiveJob>& active, const Principal& who,
                  util::Time now, nlohmann::json& jobs, QueueWaits& queue) {
  for (const auto& [id, job] : active) {
    if (!who.may_access_team(job.rec.team)) continue;
    jobs[std::string(model::job_state_name(job.rec.state))] =
        jobs[std::string(model::job_state_name(job.rec.state))].get<int64_t>() + 1;
    if (job.rec.state != model::JobState::Pending) continue;
    queue.held += job.rec.held ? 1 : 0;
    const util::Time since =
        job.rec.queued_since > util::kEpoch ? job.rec.queued_since : job.rec.submitted;
    queue.waits.push_back(std::max(0.0, util::to_seconds(now - since)));
  }
}

nlohmann::json queue_json(const QueueWaits& q) {
  const auto wait_max = q.waits.empty()
                            ? nlohmann::json(nullptr)
                            : nlohmann::json(*std::max_element(q.waits.begin(), q.waits.end()));
  return {{"pending", static_cast<int64_t>(q.waits.size())},
          {"held", q.held},
          {"waitMedianSeconds", median(q.waits)},
          {"waitMaxSeconds", wait_max}};
}

// The budgets of the teams `who` may see.
nlohmann::json budget_rows(const std::vector<model::Team>& teams, const CostKeeping& cost,
                           const Principal& who) {
  nlohmann::json budgets = nlohmann::json::array();
  for (const auto& t : teams) {
    if (t.budget_usd <= 0 || !who.may_access_team(t.name)) continue;
    const auto left = cost.budget_left(t.name);
    budgets.push_back(
        {{"team", t.name},
         {"period", t.budget_period == model::Team::BudgetPeriod::Day ? "day" : "month"},
         {"budgetUsd", t.budget_usd},
         {"spentUsd", left ? t.budget_usd - *left : 0.0}});
  }
  return budgets;
}

// What `scope_team` ("" for all) spent from `day` to `now`.
double spent_since(CostKeeping& cost, util::Time day, util::Time now,
                   const std::string& scope_team) {
  const cloud::CostReport today = cost.ledger_at(now).report(day, now);
  if (scope_team.empty()) return today.total.cost_usd;
  auto it = today.teams.find(scope_team);
  return it != today.teams.end() ? it->second.cost_usd : 0;
}

}  // namespace

nlohmann::json ControlPlane::summary(const Principal& who) {
  const util::Time now = clock_.now();
  const util::Time day = util::Time(std::chrono::floor<std::chrono::days>(now));
  const std::string scope_team = who.admin ? "" : who.team;
  nlohmann::json jobs = nlohmann::json::object();
  for (auto state : kSummaryStates) jobs[std::string(model::job_state_name(state))] = 0;
  QueueWaits queue;
  double spent_today = 0;
  nlohmann::json budgets;
  {
    util::MutexLock lock(mu_);
    count_active(jobs_.active(), who, now, jobs, queue);
    spent_today = spent_since(cost_, day, now, scope_team);
    budgets = budget_rows(options_.config.teams, cost_, who);
  }
  {
    util::MutexLock lock(reader_mu_);
    for (auto state : kSummaryStates) {
      if (!model::is_terminal(state)) continue;
      auto n = reader_->count_jobs({.state = state, .team = scope_team});
      if (n.is_ok()) jobs[std::string(model::job_state_name(state))] = *n;
    }
  }
  return {{"time", util::format_time(now)},
          {"scope", who.admin ? "all" : "team"},
          {"gpus", gpu_counts(nodes(), gpus(who), who)},
          {"jobs", std::move(jobs)},
          {"queue", queue_json(queue)},
          {"alerts", alert_counts(alerts(false, who))},
          {"spend",
           {{"todayUsd", spent_today}, {"since", util::format_time(day)}, {"budgets", budgets}}}};
}

}  // namespace trainyard::server
