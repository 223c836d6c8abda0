#include "sim/metrics.h"

#include <algorithm>
#include <cmath>

#include "model/job.h"
#include "model/quantity.h"

namespace trainyard::sim {
namespace {

std::string priority_class_name(int priority) {
  if (priority >= model::kPriorityHigh) return "high";
  if (priority >= model::kPriorityNormal) return "normal";
  return "low";
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const size_t idx = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  return values[idx];
}

double jain_index(const std::vector<double>& values) {
  if (values.empty()) return 1;
  double s = 0, sq = 0;
  for (double x : values) {
    s += x;
    sq += x * x;
  }
  return sq > 0 ? s * s / (static_cast<double>(values.size()) * sq) : 1;
}

Summary summarize(const SimResult& r) {
  Summary s;
  s.policy = r.policy;
  s.jobs = static_cast<int64_t>(r.jobs.size());
  s.unfinished = r.unfinished;
  s.events = r.events;
  s.plan_calls = r.plan_calls;
  s.wall_seconds = r.wall_seconds;
  if (r.jobs.empty()) return s;
  std::vector<double> jct, queue, rho;
  std::map<std::string, std::vector<double>> by_class;
  std::vector<std::vector<double>> team_jct(r.teams.size()), team_rho(r.teams.size());
  util::Time first = r.jobs.front().submit, last = r.jobs.front().finish;
  double work_gpu_s = 0, lost_gpu_s = 0, preemptions = 0;
  const double capacity_gpus = static_cast<double>(r.capacity_milli) / model::kMilliPerGpu;
  for (const JobOutcome& j : r.jobs) {
    const double t = util::to_seconds(j.finish - j.submit);
    const double dur = util::to_seconds(j.duration);
    const double gpus = static_cast<double>(j.gpu_milli) / model::kMilliPerGpu;
    jct.push_back(t);
    queue.push_back(util::to_seconds(j.first_start - j.submit));
    const double fair_share = capacity_gpus / std::max(1, j.active_teams_at_submit);
    const double t_iso = dur * std::max(1.0, fair_share > 0 ? gpus / fair_share : 1.0);
    const double ftf = t_iso > 0 ? t / t_iso : 1.0;
    rho.push_back(ftf);
    by_class[priority_class_name(j.priority)].push_back(t);
    if (j.team >= 0) {
      team_jct[j.team].push_back(t);
      team_rho[j.team].push_back(ftf);
    }
    first = std::min(first, j.submit);
    last = std::max(last, j.finish);
    work_gpu_s += dur * gpus;
    lost_gpu_s += util::to_seconds(j.lost_work + j.restart_overhead) * gpus;
    preemptions += j.preemptions;
  }
  const double n = static_cast<double>(r.jobs.size());
  s.avg_jct_s = mean(jct);
  s.p50_jct_s = percentile(jct, 50);
  s.p95_jct_s = percentile(jct, 95);
  s.p99_jct_s = percentile(jct, 99);
  s.avg_queue_s = mean(queue);
  s.p99_queue_s = percentile(queue, 99);
  s.makespan_s = util::to_seconds(last - first);
  const double capacity_gpu_s = capacity_gpus * s.makespan_s;
  s.gpu_allocation = capacity_gpu_s > 0 ? r.allocated_gpu_seconds / capacity_gpu_s : 0;
  s.useful_utilization = capacity_gpu_s > 0 ? work_gpu_s / capacity_gpu_s : 0;
  s.preemptions_per_job = preemptions / n;
  s.gpu_hours_lost = lost_gpu_s / 3600.0;
  s.worst_ftf = *std::max_element(rho.begin(), rho.end());
  s.unfair_share = static_cast<double>(std::count_if(rho.begin(), rho.end(), [](double x) { return x > 1.0 + 1e-9; })) / n;
  std::vector<double> team_means;
  for (size_t t = 0; t < r.teams.size(); ++t) {
    if (team_rho[t].empty()) continue;
    team_means.push_back(mean(team_rho[t]));
    s.avg_jct_by_team[r.teams[t]] = mean(team_jct[t]);
  }
  s.jain_teams = jain_index(team_means);
  for (const auto& [cls, v] : by_class) s.avg_jct_by_priority_class[cls] = mean(v);
  return s;
}

}  // namespace trainyard::sim
