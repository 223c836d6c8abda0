// A cluster described in YAML: pools of alike nodes (accelerator model, GPUs per node, count,
// CPU, memory, MIG, racks, labels, price), explicit nodes, and teams with fair-share weights,
// cohorts and quotas. The simulator reads whole clusters (docs/simulator.md); the server reads
// only the teams from its config file (docs/server.md), next to keys of its own.
// Unknown keys and wrong types are refused with file:line:column, the key path and what to write
// instead (model/yaml_reader.h).
#pragma once

#include <string>
#include <vector>

#include "model/node.h"
#include "model/team.h"
#include "model/yaml_reader.h"
#include "util/status.h"

namespace trainyard::model {

struct ClusterConfig {
  std::string name;
  std::vector<Pool> pools;
  std::vector<Node> nodes;
  std::vector<Team> teams;

  int64_t total_gpus() const;
};

struct ClusterParseOptions {
  std::vector<std::string> extra_root_keys;  // keys the caller parses itself; skipped here
  bool require_nodes = true;
  bool allow_nodes = true;  // false: pools:/nodes: are refused (the server's nodes are its GPUs)
};

util::Result<ClusterConfig> parse_cluster_yaml(const std::string& text, const std::string& file,
                                               const ClusterParseOptions& options = {});
util::Result<ClusterConfig> load_cluster_yaml(const std::string& path);
// The same from a root mapping already loaded (the server's config file holds teams: beside keys
// of its own).
util::Result<ClusterConfig> parse_cluster_root(const YamlReader& r, const YamlField& root,
                                               const ClusterParseOptions& options);

}  // namespace trainyard::model
