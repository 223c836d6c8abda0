// ControlPlane's views of the machine and the queues: `trainyard nodes` and `queues`.
#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "sched/policy.h"
#include "sched/snapshot_builder.h"
#include "server/control_plane.h"
#include "server/fleet.h"
#include "server/queue_standing.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

nlohmann::json ControlPlane::nodes() const {
  util::MutexLock lock(mu_);
  nlohmann::json arr = nlohmann::json::array();
  for (size_t idx = 0; idx < nodes_.size(); ++idx) {
    const LocalNode& n = nodes_[idx];
    std::vector<std::vector<int64_t>> users(n.gpus.size());
    // Per GPU: what each placed worker holds of it (a MIG instance, a fraction, or all of it).
    std::vector<nlohmann::json> shares(n.gpus.size(), nlohmann::json::array());
    const model::Accelerator* acc = model::find_accelerator(n.node.gpu_model);
    for (const auto& [id, job] : active_) {
      for (const auto& a : job.placement) {
        if (a.node_idx == static_cast<int>(idx) && a.gpu_idx >= 0 &&
            a.gpu_idx < static_cast<int>(users.size())) {
          if (std::find(users[a.gpu_idx].begin(), users[a.gpu_idx].end(), id.value()) ==
              users[a.gpu_idx].end())
            users[a.gpu_idx].push_back(id.value());
          nlohmann::json share = {{"job", id.value()}, {"worker", a.worker}};
          if (a.mig_profile >= 0 && acc != nullptr &&
              a.mig_profile < static_cast<int>(acc->mig_profiles.size())) {
            const model::MigProfile& p = acc->mig_profiles[a.mig_profile];
            share["migProfile"] = std::string(p.name);
            share["migStart"] = a.mig_start;
            share["computeSlices"] = p.compute_slices;
            share["memorySlices"] = p.memory_slices;
            share["gpuFraction"] = model::mig_gpu_fraction(p.compute_slices);
          } else {
            share["gpuFraction"] = a.milli > 0 ? a.milli / 1000.0 : 1.0;
          }
          shares[a.gpu_idx].push_back(std::move(share));
        }
      }
    }
    nlohmann::json gpus = nlohmann::json::array();
    int used = 0;
    for (size_t g = 0; g < n.gpus.size(); ++g) {
      const auto& d = n.gpus[g];
      used += users[g].empty() ? 0 : 1;
      gpus.push_back({{"index", d.index},
                      {"uuid", d.uuid},
                      {"name", d.name},
                      {"memoryBytes", d.memory.value()},
                      {"mig", d.mig_enabled},
                      {"jobs", users[g]},
                      {"shares", std::move(shares[g])}});
    }
    arr.push_back({{"name", n.node.name},
                   {"gpuModel", n.node.gpu_model},
                   {"gpus", n.node.gpu_count},
                   {"gpusInUse", used},
                   {"simulated", n.simulated},
                   {"mig", n.node.mig_enabled},
                   {"cpuMilli", n.node.cpu.value()},
                   {"memoryBytes", n.node.memory.value()},
                   {"labels", n.node.labels},
                   {"pool", n.node.pool},
                   {"zone", n.zone},
                   {"state", n.cloud || n.batch ? std::string(model::node_state_name(n.node.state))
                                                : "ready"},
                   {"pricePerHour", n.price_per_hour},
                   {"cloud", n.cloud},
                   {"devices", std::move(gpus)}});
    if (n.batch) {
      nlohmann::json& row = arr.back();
      row["executor"] = "slurm";
      row["address"] = n.address;
      row["gpusHeldOutside"] = std::popcount(n.gpus_held_outside);
      row["gpusInUse"] = used + std::popcount(n.gpus_held_outside);
      if (!n.problem.empty()) row["problem"] = n.problem;
    }
  }
  if (fleet_) {
    // Requested and not up yet: shown so a user sees the capacity coming.
    for (const auto& [id, f] : fleet_->nodes()) {
      if (f.state != FleetNodeState::Provisioning) continue;
      const FleetPool& p = fleet_->pools()[f.pool];
      arr.push_back({{"name", f.name},
                     {"gpuModel", p.pool.gpu_model},
                     {"gpus", p.pool.gpus_per_node},
                     {"gpusInUse", 0},
                     {"simulated", true},
                     {"mig", false},
                     {"cpuMilli", p.pool.cpu.value()},
                     {"memoryBytes", p.pool.memory.value()},
                     {"labels", p.pool.labels},
                     {"pool", p.pool.name},
                     {"zone", f.zone >= 0 ? p.zones[f.zone].name : ""},
                     {"state", "provisioning"},
                     {"pricePerHour", f.price_per_hour},
                     {"cloud", true},
                     {"devices", nlohmann::json::array()}});
    }
  }
  nlohmann::json pools = nlohmann::json::array();
  if (fleet_) {
    for (const auto& p : fleet_->pools()) {
      pools.push_back({{"name", p.pool.name},
                       {"kind", std::string(model::pool_kind_name(p.pool.kind))},
                       {"provider", p.pool.provider},
                       {"instanceType", p.pool.instance_type},
                       {"region", p.pool.region},
                       {"gpuModel", p.pool.gpu_model},
                       {"gpusPerNode", p.pool.gpus_per_node},
                       {"minNodes", p.pool.min_nodes},
                       {"maxNodes", p.pool.max_nodes},
                       {"pricePerNodeHour", p.pool.price_per_node_hour},
                       {"interruptions", p.interruptions}});
    }
  }
  return nlohmann::json{{"items", std::move(arr)}, {"pools", std::move(pools)}};
}

nlohmann::json ControlPlane::queues(const Principal& who) const {
  struct Row {
    double weight = 1;
    std::string cohort;
    nlohmann::json quota = nlohmann::json::object();
    int pending = 0, running = 0;
    int64_t gpu_milli = 0;
  };
  std::map<std::string, Row> rows;
  for (const auto& t : options_.config.teams) {
    Row& r = rows[t.name];
    r.weight = t.weight;
    r.cohort = t.cohort;
    for (const auto& [model_name, q] : t.quotas)
      r.quota[model_name] = static_cast<double>(q.nominal.value()) / 1000.0;
  }
  util::MutexLock lock(mu_);
  for (const auto& team : teams_seen_) rows[team];
  for (const auto& [id, job] : active_) {
    Row& r = rows[job.rec.team];
    if (job.workers.empty()) {
      ++r.pending;
    } else {
      ++r.running;
      r.gpu_milli += job.manifest.spec.total_gpu_share().value();
    }
  }
  // Where each team stands (queue_standing.h): a snapshot of the nodes, the teams in the order
  // the reconcile loop's snapshot lists them (the fair policy breaks ties between equal shares
  // by it) with their decayed past usage, and the running jobs' placements.
  sched::Snapshot snap;
  snap.now = clock_.now();
  if (fleet_) fleet_->add_pools(snap);
  for (const auto& n : nodes_) sched::add_node(snap, n.node);
  for (const auto& t : options_.config.teams) sched::add_team(snap, t);
  for (const auto& [id, job] : active_) {
    if (sched::find_team(snap, job.rec.team) < 0)
      sched::add_team(snap, model::Team{.name = job.rec.team});
  }
  for (const auto& [name, r] : rows) {
    if (sched::find_team(snap, name) < 0) sched::add_team(snap, model::Team{.name = name});
  }
  for (auto& team : snap.teams) {
    auto it = std::find(usage_teams_.begin(), usage_teams_.end(), team.name);
    if (usage_ && it != usage_teams_.end())
      team.past_usage_share = usage_->share(static_cast<int>(it - usage_teams_.begin()));
  }
  for (const auto& [id, job] : active_) {
    if (job.workers.empty()) continue;
    sched::SnapshotJob sj = sched::make_pending_job(snap, id, job.manifest.spec, job.rec.submitted);
    sj.phase = sched::JobPhase::Running;
    sj.placement = job.placement;
    snap.jobs.push_back(std::move(sj));
  }
  const auto traits = sched::find_policy(options_.config.policy.name);
  const std::map<std::string, nlohmann::json> standing =
      queue_standing(snap, traits.is_ok() && traits->order == sched::QueueOrderKind::DominantShare);
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& [name, r] : rows) {
    if (!who.may_access_team(name)) continue;
    arr.push_back({{"name", name},
                   {"weight", r.weight},
                   {"cohort", r.cohort},
                   {"quota", r.quota},
                   {"pending", r.pending},
                   {"running", r.running},
                   {"gpusInUse", static_cast<double>(r.gpu_milli) / 1000.0}});
    if (auto it = standing.find(name); it != standing.end()) arr.back().update(it->second);
    nlohmann::json budget = nullptr;
    for (const auto& t : options_.config.teams) {
      if (t.name != name || t.budget_usd <= 0) continue;
      const auto left = budget_left_.find(t.name);
      budget = {{"period", t.budget_period == model::Team::BudgetPeriod::Day ? "day" : "month"},
                {"budgetUsd", t.budget_usd},
                {"spentUsd", left == budget_left_.end() ? 0.0 : t.budget_usd - left->second}};
    }
    arr.back()["budget"] = std::move(budget);
  }
  return nlohmann::json{{"items", std::move(arr)}, {"policy", options_.config.policy.name}};
}

}  // namespace trainyard::server
