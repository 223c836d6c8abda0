// ControlPlane's views of the machine and the queues: `trainyard nodes` and `queues`.
#include <fmt/format.h>

#include "server/control_plane.h"

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
                   {"devices", std::move(gpus)}});
  }
  return nlohmann::json{{"items", std::move(arr)}};
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
