// Nodes and pools: the machines jobs run on and how they were bought.
// Plain data; validation lives with the parsers that build them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/labels.h"
#include "model/quantity.h"
#include "util/ids.h"
#include "util/status.h"

namespace trainyard::model {

enum class NodeState { Provisioning, Ready, Draining, Terminating, Gone };
enum class PoolKind { OnDemand, Spot, Reserved, Static };

std::string_view node_state_name(NodeState s);
std::string_view pool_kind_name(PoolKind k);
util::Result<PoolKind> parse_pool_kind(std::string_view text);

// Most GPUs a node may have; bounds per-node arrays in the scheduler.
inline constexpr int kMaxGpusPerNode = 16;

struct Node {
  util::NodeId id;
  std::string name;
  std::string pool;
  std::string gpu_model;  // canonical accelerator name, or the trace's own model name
  int gpu_count = 0;
  bool mig_enabled = false;  // GPUs are cut into MIG instances on demand
  CpuMilli cpu{0};
  Bytes memory{0};
  std::string rack;  // topology domain for gang packing; empty = own domain
  Labels labels;
  NodeState state = NodeState::Ready;
};

struct Pool {
  std::string name;
  PoolKind kind = PoolKind::Static;
  std::string gpu_model;
  int gpus_per_node = 0;
  int min_nodes = 0;
  int max_nodes = 0;
  double price_per_node_hour = 0;  // accounting only; never decides a fit
  // Cloud pools: nodes come and go through a cloud::Provider between min_nodes and max_nodes.
  // The offering (provider + instance type, optionally region/zones) is resolved against the
  // catalog by the driver, which fills gpu_model, gpus_per_node and the price from it.
  bool autoscaled = false;
  std::string provider;               // "aws", "gcp", "azure", ...
  std::string instance_type;          // "p3.2xlarge"
  std::string region;                 // empty = any region the catalog lists (cheapest first)
  std::vector<std::string> zones;     // preference order; empty = every zone of the region
  int priority = 0;                   // higher is tried first among pools that fit a job
  double idle_timeout_seconds = 600;  // release a node idle this long (0 = never)
  // Training work per GPU-hour relative to a V100 (Gavel's table, cloud/throughput.h); the
  // autoscaler ranks pools by cost per unit of work. 1 when unknown.
  double relative_throughput = 1.0;
  // The node template (cpu, memory, labels, MIG) the pool's nodes get; nodes: lists of
  // explicit pools are built from it too.
  CpuMilli cpu{0};
  Bytes memory{0};
  bool mig_enabled = false;
  Labels labels;
};

}  // namespace trainyard::model
