#include "sched/queue_order.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

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

namespace {

// Sorted order of `keyed` when it was built in arrival order and only `major` (a few distinct
// values) varies: a stable bucketing by major is then the full sort, in linear time.
bool rank_by_buckets(const std::vector<std::pair<RankKey, int>>& keyed, std::vector<int>* out) {
  constexpr size_t kMaxBuckets = 16;
  std::vector<int64_t> majors;
  for (const auto& entry : keyed) {
    if (entry.first.minor != 0) return false;
    if (std::find(majors.begin(), majors.end(), entry.first.major) == majors.end()) {
      if (majors.size() == kMaxBuckets) return false;
      majors.push_back(entry.first.major);
    }
  }
  std::sort(majors.begin(), majors.end());
  out->reserve(keyed.size());
  for (int64_t m : majors) {
    for (const auto& [key, idx] : keyed) {
      if (key.major == m) out->push_back(idx);
    }
  }
  return true;
}

// The hint, if it lists every job exactly in (submitted, id) order; else empty.
const std::vector<int32_t>* valid_arrival_order(const Snapshot& snap) {
  const auto& order = snap.arrival_order;
  if (order.size() != snap.jobs.size()) return nullptr;
  for (size_t n = 0; n < order.size(); ++n) {
    if (order[n] < 0 || static_cast<size_t>(order[n]) >= snap.jobs.size()) return nullptr;
    if (n > 0) {
      const SnapshotJob& a = snap.jobs[order[n - 1]];
      const SnapshotJob& b = snap.jobs[order[n]];
      if (a.submitted > b.submitted || (a.submitted == b.submitted && !(a.id < b.id)))
        return nullptr;
    }
  }
  return &order;
}

}  // namespace

namespace {

// A job's place when the arrival order is known and only RankKey::major varies: 16 bytes
// instead of RankKey and an index (48), so the sort moves a third as much. Ties fall to the
// position in the arrival order, which is the (submitted, id) order RankKey breaks them by.
struct ArrivalKey {
  uint64_t major;     // RankKey::major with its sign bit flipped: unsigned order is signed order
  uint64_t position;  // in Snapshot::arrival_order
  bool operator<(const ArrivalKey& o) const {
    return major != o.major ? major < o.major : position < o.position;
  }
};

// Sorts keys that are in position order by major, keeping position order among equal majors:
// a stable radix sort, 11 bits a pass, skipping the digits every key shares (remaining times
// use about 40 of the 64 bits), so a pass costs two linear scans instead of a comparison sort.
void sort_by_major(std::vector<ArrivalKey>& keys) {
  constexpr int kBits = 11;
  constexpr int kDigits = (64 + kBits - 1) / kBits;
  constexpr size_t kBuckets = size_t{1} << kBits;
  std::vector<std::array<uint32_t, kBuckets>> counts(kDigits);
  for (const ArrivalKey& k : keys) {
    for (int d = 0; d < kDigits; ++d) ++counts[d][(k.major >> (d * kBits)) & (kBuckets - 1)];
  }
  std::vector<ArrivalKey> scratch(keys.size());
  for (int d = 0; d < kDigits; ++d) {
    auto& count = counts[d];
    if (std::find(count.begin(), count.end(), keys.size()) != count.end()) continue;
    uint32_t sum = 0;
    for (uint32_t& c : count) sum += std::exchange(c, sum);
    for (const ArrivalKey& k : keys)
      scratch[count[(k.major >> (d * kBits)) & (kBuckets - 1)]++] = k;
    keys.swap(scratch);
  }
}

// What ranking reads of a job: id and phase (its first cache line) and its times.
void prefetch_rank_fields(const SnapshotJob& job) {
  __builtin_prefetch(&job);
  __builtin_prefetch(&job.submitted);
  __builtin_prefetch(&job.remaining);
}

// rank_jobs() for orders without a minor key, when the arrival-order hint is valid (checked in
// the same pass: the jobs are read once, in hint order, scattered over the job array); false
// when it is not. A few distinct majors (arrival, priority, Tiresias queues) are bucketed in
// linear time; else sorted.
template <class MajorOf>
bool rank_in_arrival_order(const Snapshot& snap, bool include_running, const MajorOf& major_of,
                           std::vector<int>* out) {
  constexpr size_t kMaxBuckets = 16;
  constexpr uint64_t kSignBit = uint64_t{1} << 63;
  constexpr size_t kAhead = 8;
  const std::vector<int32_t>& arrival = snap.arrival_order;
  const size_t count = snap.jobs.size();
  if (arrival.size() != count) return false;
  std::vector<ArrivalKey> keyed;
  keyed.reserve(count);
  std::vector<uint64_t> majors;
  bool few = true;
  const SnapshotJob* prev = nullptr;
  for (size_t n = 0; n < count; ++n) {
    if (n + kAhead < count && static_cast<uint32_t>(arrival[n + kAhead]) < count) {
      prefetch_rank_fields(snap.jobs[static_cast<size_t>(arrival[n + kAhead])]);
    }
    if (arrival[n] < 0 || static_cast<size_t>(arrival[n]) >= count) return false;
    const SnapshotJob& job = snap.jobs[static_cast<size_t>(arrival[n])];
    if (prev != nullptr && (prev->submitted > job.submitted ||
                            (prev->submitted == job.submitted && !(prev->id < job.id)))) {
      return false;
    }
    prev = &job;
    if (job.is_running() && !include_running) continue;
    const uint64_t major = static_cast<uint64_t>(major_of(job)) ^ kSignBit;
    keyed.push_back({major, n});
    if (few && std::find(majors.begin(), majors.end(), major) == majors.end()) {
      few = majors.size() < kMaxBuckets;
      majors.push_back(major);
    }
  }
  out->reserve(keyed.size());
  if (few) {
    std::sort(majors.begin(), majors.end());
    for (uint64_t m : majors) {
      for (const ArrivalKey& k : keyed) {
        if (k.major == m) out->push_back(arrival[k.position]);
      }
    }
    return true;
  }
  sort_by_major(keyed);
  for (const ArrivalKey& k : keyed) out->push_back(arrival[k.position]);
  return true;
}

}  // namespace

std::vector<int> rank_jobs(const Snapshot& snap, const PolicyConfig& cfg, QueueOrderKind order,
                           bool include_running) {
  std::optional<GittinsIndex> gittins;
  if (order == QueueOrderKind::Tiresias && !cfg.tiresias.gittins_prior.empty()) {
    gittins.emplace(cfg.tiresias.gittins_prior);
  }
  const auto& thresholds = cfg.tiresias.queue_thresholds;
  auto major_of = [&](const SnapshotJob& job) -> int64_t {
    switch (order) {
      case QueueOrderKind::Arrival:
      case QueueOrderKind::DominantShare:
        return 0;
      case QueueOrderKind::RemainingTime:
        return job.remaining.count();
      case QueueOrderKind::Priority:
        return -int64_t{job.priority};
      case QueueOrderKind::Tiresias:
        return tiresias_queue(job, snap.now, cfg.tiresias);
      case QueueOrderKind::Goodput:
        return tiresias_queue(job, snap.now, cfg.tiresias);
    }
    return 0;
  };
  if (!gittins) {
    std::vector<int> out;
    if (rank_in_arrival_order(snap, include_running, major_of, &out)) return out;
  }
  const std::vector<int32_t>* arrival = valid_arrival_order(snap);
  std::vector<std::pair<RankKey, int>> keyed;
  keyed.reserve(snap.jobs.size());
  for (size_t n = 0; n < snap.jobs.size(); ++n) {
    const size_t i = arrival ? static_cast<size_t>((*arrival)[n]) : n;
    const SnapshotJob& job = snap.jobs[i];
    if (job.is_running() && !include_running) continue;
    RankKey key{.major = major_of(job), .submitted = job.submitted, .id = job.id};
    if (gittins) {
      const int q = static_cast<int>(key.major);
      const double attained = gpu_seconds(job.attained_gpu_time);
      const double next = q < static_cast<int>(thresholds.size()) ? thresholds[q] : 0.0;
      const double quantum = next > attained ? next - attained : 1e12;
      key.minor = -gittins->index(attained, quantum);
    }
    keyed.emplace_back(key, static_cast<int>(i));
  }
  std::vector<int> out;
  if (arrival && rank_by_buckets(keyed, &out)) return out;
  std::sort(keyed.begin(), keyed.end());
  out.reserve(keyed.size());
  for (const auto& [key, idx] : keyed) out.push_back(idx);
  return out;
}

std::optional<Time> next_decision_time(const Snapshot& snap, const PolicyConfig& cfg) {
  auto traits = find_policy(cfg.name);
  if (traits.is_ok() && traits->order == QueueOrderKind::Goodput) {
    // Goodput: a round while any job runs (running jobs leave their minimum run time and save
    // checkpoints, which lets them move). With none running nothing changes until an event:
    // every waiting job that fits was started by this plan.
    const bool running = std::any_of(snap.jobs.begin(), snap.jobs.end(), [](const SnapshotJob& j) {
      return j.phase == JobPhase::Running;
    });
    if (!running || cfg.goodput.round <= Duration(0)) return std::nullopt;
    return snap.now + cfg.goodput.round;
  }
  if (!traits.is_ok()) return std::nullopt;
  std::optional<Time> best;
  auto consider = [&](Time t) {
    if (t > snap.now && (!best || t < *best)) best = t;
  };
  // A preemptive policy may preempt a running job once its minimum run time is over: while jobs
  // wait, the end of the earliest protection is a decision time (a driver that plans on events
  // alone would otherwise see it only at the next arrival or finish).
  // Under `priority`, only the protection of a job that some waiting job outranks counts
  // (preemption.cc's eligible()): no other end can let anyone preempt. The other rules keep
  // every end: their plans also change between events as running jobs' remaining time and
  // service grow, and planning at fewer moments changed their results.
  if (traits->victims != VictimRule::None && cfg.min_runtime > Duration(0)) {
    bool waiting = false;
    int top_priority = std::numeric_limits<int>::min();
    for (const SnapshotJob& j : snap.jobs) {
      if (j.is_running()) continue;
      waiting = true;
      top_priority = std::max(top_priority, j.priority);
    }
    const bool by_priority = traits->victims == VictimRule::LowerPriority;
    if (waiting) {
      for (const SnapshotJob& job : snap.jobs) {
        if (job.phase == JobPhase::Running && job.preemptible &&
            (!by_priority || job.priority < top_priority))
          consider(job.started + cfg.min_runtime);
      }
    }
  }
  if (traits->order != QueueOrderKind::Tiresias) return best;
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
