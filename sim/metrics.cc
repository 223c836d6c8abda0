#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <queue>

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

std::vector<double> isolated_completion_times(const SimResult& r) {
  std::vector<std::vector<size_t>> by_team(r.teams.size());
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    if (r.jobs[i].team >= 0) by_team[r.jobs[i].team].push_back(i);
  }
  double total_weight = 0;
  for (size_t t = 0; t < by_team.size(); ++t) {
    if (!by_team[t].empty()) total_weight += r.team_weights[t];
  }
  std::vector<double> t_iso(r.jobs.size(), 0.0);
  for (size_t i = 0; i < r.jobs.size(); ++i) t_iso[i] = util::to_seconds(r.jobs[i].duration);
  for (size_t t = 0; t < by_team.size(); ++t) {
    if (by_team[t].empty() || total_weight <= 0) continue;
    const double slice =
        std::max(1.0, static_cast<double>(r.capacity_milli) * r.team_weights[t] / total_weight);
    // Strict FIFO list scheduling on `slice` milli-GPUs; a job larger than the slice takes all of
    // it for proportionally longer.
    std::sort(by_team[t].begin(), by_team[t].end(), [&](size_t a, size_t b) {
      return r.jobs[a].submit != r.jobs[b].submit ? r.jobs[a].submit < r.jobs[b].submit : a < b;
    });
    using End = std::pair<double, double>;  // (end time, milli held)
    std::priority_queue<End, std::vector<End>, std::greater<>> running;
    double free = slice, last_start = 0;
    for (size_t i : by_team[t]) {
      const JobOutcome& j = r.jobs[i];
      const double milli = static_cast<double>(j.gpu_milli);
      if (milli <= 0) continue;
      const double need = std::min(milli, slice);
      const double dur = util::to_seconds(j.duration) * std::max(1.0, milli / slice);
      double start = std::max(util::to_seconds(j.submit), last_start);
      while (free < need - 1e-9 && !running.empty()) {
        start = std::max(start, running.top().first);
        free += running.top().second;
        running.pop();
      }
      last_start = start;
      running.emplace(start + dur, need);
      free -= need;
      t_iso[i] = start + dur - util::to_seconds(j.submit);
    }
  }
  return t_iso;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const size_t idx =
      static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
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
  const std::vector<double> t_iso = isolated_completion_times(r);
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobOutcome& j = r.jobs[i];
    const double t = util::to_seconds(j.finish - j.submit);
    const double dur = util::to_seconds(j.duration);
    const double gpus = static_cast<double>(j.gpu_milli) / model::kMilliPerGpu;
    jct.push_back(t);
    queue.push_back(util::to_seconds(j.first_start - j.submit));
    const double ftf = t_iso[i] > 0 ? t / t_iso[i] : 1.0;
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
  s.unfair_share = static_cast<double>(std::count_if(rho.begin(), rho.end(),
                                                     [](double x) { return x > 1.0 + 1e-9; })) /
                   n;
  std::vector<double> team_means;
  for (size_t t = 0; t < r.teams.size(); ++t) {
    if (team_rho[t].empty()) continue;
    team_means.push_back(std::max(1.0, mean(team_rho[t])));
    s.avg_jct_by_team[r.teams[t]] = mean(team_jct[t]);
  }
  s.jain_teams = jain_index(team_means);
  for (const auto& [cls, v] : by_class) s.avg_jct_by_priority_class[cls] = mean(v);
  return s;
}

}  // namespace trainyard::sim
