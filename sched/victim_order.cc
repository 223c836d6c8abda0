#include "sched/internal/victim_order.h"

#include <algorithm>

#include "sched/queue_order.h"

namespace trainyard::sched::internal {

VictimFacts facts_of(const SnapshotJob& job, const TiresiasConfig& tiresias) {
  return {.running_preemptible = job.preemptible && job.phase == JobPhase::Running,
          .team = job.team,
          .priority = job.priority,
          .service_queue = tiresias_service_queue(job, tiresias),
          .remaining = job.remaining};
}

void VictimOrder::build(const Snapshot& snap, std::span<const int32_t> rank_of, VictimRule rule,
                        const TiresiasConfig& tiresias, Duration min_runtime) {
  // The sort reads a compact copy of each running job's keys, not the 256-byte SnapshotJobs
  // scattered over the job array.
  struct Key {
    int64_t value = 0;  // lower = less valuable, by the rule's own measure
    Duration at_risk{0};
    Time started{};
    int32_t rank = 0;
    JobId id;
    int idx = 0;
  };
  std::vector<Key> keys;
  for (size_t i = 0; i < snap.jobs.size(); ++i) {
    const SnapshotJob& j = snap.jobs[i];
    if (!j.is_running()) continue;
    Key k{.at_risk = j.work_at_risk(snap.now),
          .started = j.started,
          .rank = rank_of.empty() ? 0 : rank_of[i],
          .id = j.id,
          .idx = static_cast<int>(i)};
    if (rule == VictimRule::LowerPriority) k.value = j.priority;
    if (rule == VictimRule::LowerServiceQueue) k.value = -tiresias_service_queue(j, tiresias);
    keys.push_back(k);
  }
  const bool reclaim = rule == VictimRule::QuotaReclaim;
  // Reclaim keeps newest-start-first: ordering it by work at risk made the fair-share run of
  // Simulator.EveryJobFinishesUnderEveryPolicyWithInvariantsChecked never finish (a
  // preemption livelock whose exact cycle is not yet analysed).
  const bool by_risk = rule == VictimRule::LowerPriority || rule == VictimRule::LowerServiceQueue;
  std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
    if (a.value != b.value) return a.value < b.value;
    if (by_risk && a.at_risk != b.at_risk) return a.at_risk < b.at_risk;
    if (reclaim) {
      if (a.started != b.started) return a.started > b.started;
    } else if (a.rank != b.rank) {
      return a.rank > b.rank;
    }
    return a.id > b.id;
  });
  jobs.reserve(keys.size());
  for (const Key& k : keys) jobs.push_back(k.idx);
  pos_of.assign(snap.jobs.size(), -1);
  gone.assign(jobs.size(), 0);
  skip.resize(jobs.size());
  // The order jumps around the job array: fetch each job well ahead, and its placement (a
  // separate allocation, found through the job) once the job itself has arrived.
  constexpr size_t kAhead = 16;
  constexpr size_t kPlacementAhead = 8;
  for (size_t pos = 0; pos < jobs.size(); ++pos) {
    if (pos + kAhead < jobs.size()) {
      const auto* ahead = reinterpret_cast<const char*>(&snap.jobs[jobs[pos + kAhead]]);
      for (size_t offset = 0; offset < sizeof(SnapshotJob); offset += 64) {
        __builtin_prefetch(ahead + offset);
      }
    }
    if (pos + kPlacementAhead < jobs.size()) {
      __builtin_prefetch(snap.jobs[jobs[pos + kPlacementAhead]].placement.data());
    }
    const SnapshotJob& job = snap.jobs[jobs[pos]];
    pos_of[jobs[pos]] = static_cast<int32_t>(pos);
    skip[pos] = static_cast<int32_t>(pos + 1);
    facts.push_back(facts_of(job, tiresias));
    if (snap.now - job.started < min_runtime) facts.back().running_preemptible = false;
    first_.push_back(
        {static_cast<int32_t>(assignments_.size()), static_cast<int32_t>(nodes_.size())});
    const auto first_node = static_cast<std::ptrdiff_t>(nodes_.size());
    for (const Assignment& a : job.placement) {
      assignments_.push_back(a);
      if (std::find(nodes_.begin() + first_node, nodes_.end(), a.node_idx) == nodes_.end()) {
        nodes_.push_back(a.node_idx);
      }
    }
    workers_.push_back({.cpu = job.worker.cpu, .memory = job.worker.memory});
    if (job.phase != JobPhase::Preempting) continue;
    leaving.push_back(static_cast<int32_t>(pos));
    gone[pos] = 1;
  }
  first_.push_back(
      {static_cast<int32_t>(assignments_.size()), static_cast<int32_t>(nodes_.size())});
  built = true;
}

int32_t VictimOrder::skip_gone(int32_t pos) {
  const auto end = static_cast<int32_t>(jobs.size());
  int32_t found = pos;
  while (found < end && gone[found]) found = skip[found];
  // Point the gone positions passed on straight to `found` (path compression).
  while (pos < found) {
    const int32_t next = skip[pos];
    skip[pos] = found;
    pos = next;
  }
  return found;
}

}  // namespace trainyard::sched::internal
