// The simulated cluster, described in YAML: pools of alike nodes (accelerator model, GPUs per
// node, count, CPU, memory, MIG, racks, labels, price), explicit nodes, and teams with
// fair-share weights, cohorts and quotas. See docs/simulator.md and examples/clusters/.
// Unknown keys and wrong types are refused with file:line:column and what to write instead.
#pragma once

#include <string>
#include <vector>

#include "model/node.h"
#include "model/team.h"
#include "util/status.h"

namespace trainyard::sim {

struct ClusterConfig {
  std::string name;
  std::vector<model::Pool> pools;
  std::vector<model::Node> nodes;
  std::vector<model::Team> teams;

  int64_t total_gpus() const;
};

util::Result<ClusterConfig> parse_cluster_yaml(const std::string& text, const std::string& file);
util::Result<ClusterConfig> load_cluster_yaml(const std::string& path);

}  // namespace trainyard::sim
