#include "sched/queue_order.h"

#include <algorithm>
#include <cmath>

namespace trainyard::sched {
namespace {

double gpu_seconds(Duration gpu_time) {
  return util::to_seconds(gpu_time);
}

double gpus_held(const SnapshotJob& job) {
  return static_cast<double>(job.gpu_share().value()) / model::kMilliPerGpu;
}

bool starved(const SnapshotJob& job, Time now, const TiresiasConfig& cfg) {
  if (job.is_running() || cfg.starvation_factor <= 0 || job.last_run.count() <= 0) return false;
  return static_cast<double>((now - job.queued_since).count()) >=
         static_cast<double>(job.last_run.count()) * cfg.starvation_factor;
}

}  // namespace

GittinsIndex::GittinsIndex(std::vector<double> samples) : sorted_(std::move(samples)) {
  std::sort(sorted_.begin(), sorted_.end());
  prefix_.resize(sorted_.size() + 1, 0.0);
  for (size_t i = 0; i < sorted_.size(); ++i) prefix_[i + 1] = prefix_[i] + sorted_[i];
}

double GittinsIndex::index(double attained, double quantum) const {
  const auto lo = std::upper_bound(sorted_.begin(), sorted_.end(), attained) - sorted_.begin();
  const auto n = static_cast<double>(sorted_.size() - lo);
  if (n == 0) return 0.0;
  const auto hi =
      std::upper_bound(sorted_.begin(), sorted_.end(), attained + quantum) - sorted_.begin();
  const auto finishing = static_cast<double>(hi - lo);
  const double finishing_work = (prefix_[hi] - prefix_[lo]) - finishing * attained;
  const double expected = (finishing_work + (n - finishing) * quantum) / n;
  if (expected <= 0) return 0.0;
  return (finishing / n) / expected;
}

int tiresias_queue(const SnapshotJob& job, Time now, const TiresiasConfig& cfg) {
  return starved(job, now, cfg) ? 0 : tiresias_service_queue(job, cfg);
}

int tiresias_service_queue(const SnapshotJob& job, const TiresiasConfig& cfg) {
  const double attained = gpu_seconds(job.attained_gpu_time);
  int q = 0;
  for (double t : cfg.queue_thresholds) {
    if (attained >= t) ++q;
  }
  return q;
}

std::vector<int> rank_jobs(const Snapshot& snap, const PolicyConfig& cfg, QueueOrderKind order,
                           bool include_running) {
  std::optional<GittinsIndex> gittins;
  if (order == QueueOrderKind::Tiresias && !cfg.tiresias.gittins_prior.empty()) {
    gittins.emplace(cfg.tiresias.gittins_prior);
  }
  const auto& thresholds = cfg.tiresias.queue_thresholds;
  std::vector<std::pair<RankKey, int>> keyed;
  keyed.reserve(snap.jobs.size());
  for (size_t i = 0; i < snap.jobs.size(); ++i) {
    const SnapshotJob& job = snap.jobs[i];
    if (job.is_running() && !include_running) continue;
    RankKey key{.submitted = job.submitted, .id = job.id};
    switch (order) {
      case QueueOrderKind::Arrival:
      case QueueOrderKind::DominantShare:
        break;
      case QueueOrderKind::RemainingTime:
        key.major = job.remaining.count();
        break;
      case QueueOrderKind::Priority:
        key.major = -int64_t{job.priority};
        break;
      case QueueOrderKind::Tiresias: {
        const int q = tiresias_queue(job, snap.now, cfg.tiresias);
        key.major = q;
        if (gittins) {
          const double attained = gpu_seconds(job.attained_gpu_time);
          const double next = q < static_cast<int>(thresholds.size()) ? thresholds[q] : 0.0;
          const double quantum = next > attained ? next - attained : 1e12;
          key.minor = -gittins->index(attained, quantum);
        }
        break;
      }
    }
    keyed.emplace_back(key, static_cast<int>(i));
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> out;
  out.reserve(keyed.size());
  for (const auto& [key, idx] : keyed) out.push_back(idx);
  return out;
}

std::optional<Time> next_decision_time(const Snapshot& snap, const PolicyConfig& cfg) {
  auto traits = find_policy(cfg.name);
  if (!traits.is_ok() || traits->order != QueueOrderKind::Tiresias) return std::nullopt;
  std::optional<Time> best;
  auto consider = [&](Time t) {
    if (t > snap.now && (!best || t < *best)) best = t;
  };
  for (const SnapshotJob& job : snap.jobs) {
    if (job.is_running()) {
      const double rate = gpus_held(job);
      if (rate <= 0) continue;
      const double attained = gpu_seconds(job.attained_gpu_time);
      for (double t : cfg.tiresias.queue_thresholds) {
        if (t > attained) {
          consider(snap.now + util::seconds_f(std::ceil((t - attained) / rate * 1e6) / 1e6));
          break;
        }
      }
    } else if (cfg.tiresias.starvation_factor > 0 && job.last_run.count() > 0 &&
               !starved(job, snap.now, cfg.tiresias)) {
      const auto wait = Duration(static_cast<int64_t>(
          std::ceil(static_cast<double>(job.last_run.count()) * cfg.tiresias.starvation_factor)));
      consider(job.queued_since + wait);
    }
  }
  return best;
}

}  // namespace trainyard::sched
