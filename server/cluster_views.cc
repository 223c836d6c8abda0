// ControlPlane's views of the machine and the queues: `trainyard nodes` and `queues`.
#include <bit>

#include <fmt/format.h>

#include "server/control_plane.h"
#include "server/fleet.h"

namespace trainyard::server {

nlohmann::json ControlPlane::nodes() const {
  std::lock_guard lock(mu_);
  nlohmann::json arr = nlohmann::json::array();
  for (size_t idx = 0; idx < nodes_.size(); ++idx) {
    const LocalNode& n = nodes_[idx];
    std::vector<std::vector<int64_t>> users(n.gpus.size());
    for (const auto& [id, job] : active_) {
      for (const auto& a : job.placement) {
        if (a.node_idx == static_cast<int>(idx) && a.gpu_idx >= 0 &&
            a.gpu_idx < static_cast<int>(users.size()))
          users[a.gpu_idx].push_back(id.value());
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
                      {"jobs", users[g]}});
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
  std::lock_guard lock(mu_);
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
  }
  return nlohmann::json{{"items", std::move(arr)}, {"policy", options_.config.policy.name}};
}

}  // namespace trainyard::server
