#include "sched/snapshot_builder.h"

#include <algorithm>

#include "util/status.h"

namespace trainyard::sched {

int intern_gpu_model(Snapshot& snap, std::string_view name) {
  const std::string canonical = model::canonical_accelerator_name(name);
  for (size_t i = 0; i < snap.gpu_models.size(); ++i) {
    if (snap.gpu_models[i] == canonical) return static_cast<int>(i);
  }
  TY_CHECK_MSG(snap.gpu_models.size() < kMaxGpuModels, "too many GPU models in one snapshot");
  snap.gpu_models.push_back(canonical);
  snap.accelerators.push_back(model::find_accelerator(canonical));
  return static_cast<int>(snap.gpu_models.size() - 1);
}

int intern_rack(Snapshot& snap, std::string_view name) {
  if (name.empty()) return -1;
  for (size_t i = 0; i < snap.racks.size(); ++i) {
    if (snap.racks[i] == name) return static_cast<int>(i);
  }
  snap.racks.emplace_back(name);
  return static_cast<int>(snap.racks.size() - 1);
}

void add_node(Snapshot& snap, const model::Node& node) {
  SnapshotNode n;
  n.id = node.id;
  n.name = node.name;
  n.gpu_count = node.gpu_count;
  n.gpu_model = node.gpu_count > 0 ? intern_gpu_model(snap, node.gpu_model) : -1;
  n.mig_enabled = node.mig_enabled;
  n.schedulable = node.state == model::NodeState::Ready;
  n.cpu = node.cpu;
  n.memory = node.memory;
  n.rack = intern_rack(snap, node.rack);
  n.labels = node.labels;
  if (n.gpu_model >= 0) n.labels[model::kLabelGpuProduct] = snap.gpu_models[n.gpu_model];
  if (!node.pool.empty()) n.labels[model::kLabelPool] = node.pool;
  n.pool = node.pool.empty() ? -1 : find_pool(snap, node.pool);
  n.spot = n.pool >= 0 && snap.pools[n.pool].kind == model::PoolKind::Spot;
  n.idle_since = snap.now;
  snap.nodes.push_back(std::move(n));
}

int add_pool(Snapshot& snap, const model::Pool& pool) {
  SnapshotPool p;
  p.name = pool.name;
  p.kind = pool.kind;
  p.autoscaled = pool.autoscaled;
  p.gpus_per_node = pool.gpus_per_node;
  p.gpu_model = pool.gpus_per_node > 0 && !pool.gpu_model.empty()
                    ? intern_gpu_model(snap, pool.gpu_model)
                    : -1;
  p.mig_enabled = pool.mig_enabled;
  p.cpu = pool.cpu;
  p.memory = pool.memory;
  // The labels add_node gives the pool's nodes, so node selectors match pools and nodes alike.
  p.labels = pool.labels;
  if (p.gpu_model >= 0) p.labels[model::kLabelGpuProduct] = snap.gpu_models[p.gpu_model];
  p.labels[model::kLabelPool] = pool.name;
  p.min_nodes = pool.min_nodes;
  p.max_nodes = pool.max_nodes;
  p.priority = pool.priority;
  p.price_per_node_hour = pool.price_per_node_hour;
  p.relative_throughput = pool.relative_throughput > 0 ? pool.relative_throughput : 1.0;
  p.idle_timeout = util::seconds_f(std::max(0.0, pool.idle_timeout_seconds));
  for (const std::string& zone : pool.zones) p.zones.push_back({.name = zone});
  snap.pools.push_back(std::move(p));
  return static_cast<int>(snap.pools.size() - 1);
}

int find_pool(const Snapshot& snap, std::string_view name) {
  for (size_t i = 0; i < snap.pools.size(); ++i) {
    if (snap.pools[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

void add_team(Snapshot& snap, const model::Team& team) {
  SnapshotTeam t;
  t.name = team.name;
  t.weight = team.weight;
  if (!team.cohort.empty()) {
    for (size_t i = 0; i < snap.cohorts.size(); ++i) {
      if (snap.cohorts[i] == team.cohort) t.cohort = static_cast<int>(i);
    }
    if (t.cohort < 0) {
      snap.cohorts.push_back(team.cohort);
      t.cohort = static_cast<int>(snap.cohorts.size() - 1);
    }
  }
  if (!team.quotas.empty()) {
    t.quota.assign(snap.gpu_models.size() + 1, QuotaEntry{});
    for (const auto& [model_name, q] : team.quotas) {
      // Only models the nodes brought: interning a new one here would shift the "all models"
      // key and leave earlier teams' quota vectors one entry short. No node can run a job on
      // a model the snapshot lacks, so its quota has nothing to limit.
      int key = model_name == model::kAnyGpuModel ? static_cast<int>(snap.gpu_models.size()) : -1;
      const std::string canonical = model::canonical_accelerator_name(model_name);
      for (size_t m = 0; key < 0 && m < snap.gpu_models.size(); ++m) {
        if (snap.gpu_models[m] == canonical) key = static_cast<int>(m);
      }
      if (key >= 0) t.quota[key] = {q.nominal.value(), q.borrowing_limit.value()};
    }
  }
  snap.teams.push_back(std::move(t));
}

int find_team(const Snapshot& snap, std::string_view name) {
  for (size_t i = 0; i < snap.teams.size(); ++i) {
    if (snap.teams[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

uint64_t gpu_model_mask(const Snapshot& snap, const std::vector<std::string>& allowed) {
  if (allowed.empty()) return 0;
  uint64_t mask = 0;
  for (const std::string& name : allowed) {
    const std::string canonical = model::canonical_accelerator_name(name);
    for (size_t i = 0; i < snap.gpu_models.size(); ++i) {
      if (snap.gpu_models[i] == canonical) mask |= uint64_t{1} << i;
    }
  }
  return mask == 0 ? kNoModelBit : mask;
}

SnapshotJob make_pending_job(const Snapshot& snap, JobId id, const model::JobSpec& spec,
                             Time submitted) {
  SnapshotJob j;
  j.id = id;
  j.team = find_team(snap, spec.team);
  j.priority = spec.priority;
  j.preemptible = spec.preemptible;
  j.workers = spec.workers;
  j.min_workers = spec.min_workers;
  j.max_workers = spec.max_workers;
  j.worker = spec.worker;
  j.gpu_model_mask = gpu_model_mask(snap, spec.allowed_gpu_models);
  j.node_selector = spec.node_selector;
  j.submitted = submitted;
  j.queued_since = submitted;
  j.runtime_limit = spec.runtime_limit;
  j.checkpoint_interval = spec.checkpoint_interval;
  return j;
}

Duration SnapshotJob::work_at_risk(Time now) const {
  if (!is_running() || now <= started) return Duration(0);
  Time safe = started;
  if (checkpoint_interval.count() > 0) {
    safe += ((now - started) / checkpoint_interval) * checkpoint_interval;
  }
  if (last_checkpoint > safe && last_checkpoint <= now) safe = last_checkpoint;
  return now - safe;
}

}  // namespace trainyard::sched
