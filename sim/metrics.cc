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

// What summarize() needs of every job of a run, gathered in one pass over r.jobs (in order).
struct JobSamples {
  std::vector<double> jct, queue, rho;
  std::map<std::string, std::vector<double>> by_class;
  std::vector<std::vector<double>> team_jct, team_rho;
  util::Time first, last;
  double work_gpu_s = 0, lost_gpu_s = 0, preemptions = 0;
};

// For a run with at least one job.
JobSamples collect_job_samples(const SimResult& r) {
  JobSamples js{.team_jct = std::vector<std::vector<double>>(r.teams.size()),
                .team_rho = std::vector<std::vector<double>>(r.teams.size()),
                .first = r.jobs.front().submit,
                .last = r.jobs.front().finish};
  const std::vector<double> t_iso = isolated_completion_times(r);
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobOutcome& j = r.jobs[i];
    const double t = util::to_seconds(j.finish - j.submit);
    const double dur = util::to_seconds(j.duration);
    const double gpus = static_cast<double>(j.gpu_milli) / model::kMilliPerGpu;
    js.jct.push_back(t);
    js.queue.push_back(util::to_seconds(j.first_start - j.submit));
    const double ftf = t_iso[i] > 0 ? t / t_iso[i] : 1.0;
    js.rho.push_back(ftf);
    js.by_class[priority_class_name(j.priority)].push_back(t);
    if (j.team >= 0) {
      js.team_jct[j.team].push_back(t);
      js.team_rho[j.team].push_back(ftf);
    }
    js.first = std::min(js.first, j.submit);
    js.last = std::max(js.last, j.finish);
    js.work_gpu_s += dur * gpus;
    js.lost_gpu_s += util::to_seconds(j.lost_work + j.restart_overhead) * gpus;
    js.preemptions += j.preemptions;
  }
  return js;
}

// Finish-time fairness (see metrics.h): the worst rho, the share of jobs with rho > 1, Jain's
// index over teams, and each team's average JCT.
void add_fairness(const SimResult& r, const JobSamples& js, Summary& s) {
  const double n = static_cast<double>(r.jobs.size());
  s.worst_ftf = *std::max_element(js.rho.begin(), js.rho.end());
  s.unfair_share = static_cast<double>(std::count_if(js.rho.begin(), js.rho.end(),
                                                     [](double x) { return x > 1.0 + 1e-9; })) /
                   n;
  std::vector<double> team_means;
  for (size_t t = 0; t < r.teams.size(); ++t) {
    if (js.team_rho[t].empty()) continue;
    team_means.push_back(std::max(1.0, mean(js.team_rho[t])));
    s.avg_jct_by_team[r.teams[t]] = mean(js.team_jct[t]);
  }
  s.jain_teams = jain_index(team_means);
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
  const JobSamples js = collect_job_samples(r);
  const double n = static_cast<double>(r.jobs.size());
  s.avg_jct_s = mean(js.jct);
  s.p50_jct_s = percentile(js.jct, 50);
  s.p95_jct_s = percentile(js.jct, 95);
  s.p99_jct_s = percentile(js.jct, 99);
  s.avg_queue_s = mean(js.queue);
  s.p99_queue_s = percentile(js.queue, 99);
  s.makespan_s = util::to_seconds(js.last - js.first);
  const double capacity_gpus = static_cast<double>(r.capacity_milli) / model::kMilliPerGpu;
  const double capacity_gpu_s = capacity_gpus * s.makespan_s;
  s.gpu_allocation = capacity_gpu_s > 0 ? r.allocated_gpu_seconds / capacity_gpu_s : 0;
  s.useful_utilization = capacity_gpu_s > 0 ? js.work_gpu_s / capacity_gpu_s : 0;
  s.preemptions_per_job = js.preemptions / n;
  s.gpu_hours_lost = js.lost_gpu_s / 3600.0;
  add_fairness(r, js, s);
  for (const auto& [cls, v] : js.by_class) s.avg_jct_by_priority_class[cls] = mean(v);
  return s;
}

}  // namespace trainyard::sim
