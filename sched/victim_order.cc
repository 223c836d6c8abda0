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
  struct Key {
    int64_t value = 0;  // lower = less valuable, by the rule's own measure
    Duration at_risk{0};
  };
  std::vector<Key> key(snap.jobs.size());
  for (size_t i = 0; i < snap.jobs.size(); ++i) {
    const SnapshotJob& j = snap.jobs[i];
    if (!j.is_running()) continue;
    jobs.push_back(static_cast<int>(i));
    key[i].at_risk = j.work_at_risk(snap.now);
    if (rule == VictimRule::LowerPriority) key[i].value = j.priority;
    if (rule == VictimRule::LowerServiceQueue) key[i].value = -tiresias_service_queue(j, tiresias);
  }
  const bool reclaim = rule == VictimRule::QuotaReclaim;
  // Reclaim keeps newest-start-first: ordering it by work at risk made the fair-share run of
  // Simulator.EveryJobFinishesUnderEveryPolicyWithInvariantsChecked never finish (a
  // preemption livelock whose exact cycle is not yet analysed).
  const bool by_risk = rule == VictimRule::LowerPriority || rule == VictimRule::LowerServiceQueue;
  std::sort(jobs.begin(), jobs.end(), [&](int a, int b) {
    const SnapshotJob& ja = snap.jobs[a];
    const SnapshotJob& jb = snap.jobs[b];
    if (key[a].value != key[b].value) return key[a].value < key[b].value;
    if (by_risk && key[a].at_risk != key[b].at_risk) return key[a].at_risk < key[b].at_risk;
    if (reclaim) {
      if (ja.started != jb.started) return ja.started > jb.started;
    } else if (rank_of[a] != rank_of[b]) {
      return rank_of[a] > rank_of[b];
    }
    return ja.id > jb.id;
  });
  pos_of.assign(snap.jobs.size(), -1);
  gone.assign(jobs.size(), 0);
  skip.resize(jobs.size());
  for (size_t pos = 0; pos < jobs.size(); ++pos) {
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
