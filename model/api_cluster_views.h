// The cluster resources of the HTTP API as plain structs (docs/api.md): GET /api/v1/nodes and
// GET /api/v1/queues. As in model/api_views.h (the job resources), the server writes its replies
// from them and the CLI reads replies back into them, so each key name is written once, in the
// to_json/from_json pair of its view (api_cluster_views.cc); from_json names the first missing
// or ill-typed field by its path and never throws.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/labels.h"
#include "util/status.h"

namespace trainyard::model {

// What one placed worker holds of a GPU.
struct GpuShareView {
  int64_t job = 0;
  int worker = 0;
  double gpu_fraction = 1;  // 1 for the whole GPU, the fraction, or MIG compute slices / 7
  // MIG instances only: the profile, its first slice and its size.
  std::optional<std::string> mig_profile;
  std::optional<int> mig_start, compute_slices, memory_slices;
  bool operator==(const GpuShareView&) const = default;
};

struct NodeDeviceView {
  int index = 0;
  std::string uuid;
  std::string name;
  int64_t memory_bytes = 0;
  bool mig = false;
  std::vector<int64_t> jobs;  // jobs that have not ended placed on it
  std::vector<GpuShareView> shares;
  bool operator==(const NodeDeviceView&) const = default;
};

// A node of a batch system (Slurm): how it is reached and what jobs outside trainyard hold.
struct BatchNodeView {
  std::string executor;  // "slurm"
  std::string address;
  int gpus_held_outside = 0;
  std::optional<std::string> problem;  // why it takes no work
  bool operator==(const BatchNodeView&) const = default;
};

struct NodeView {
  std::string name;
  std::string gpu_model;  // "" without GPUs
  int gpus = 0;
  int gpus_in_use = 0;
  bool simulated = false;
  bool mig = false;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  Labels labels;
  std::string pool;
  std::string zone;
  std::string state;  // provisioning, ready, draining, terminating, gone
  double price_per_hour = 0;
  bool cloud = false;
  std::vector<NodeDeviceView> devices;
  std::optional<BatchNodeView> batch;
  bool operator==(const NodeView&) const = default;
};

struct PoolView {
  std::string name;
  std::string kind;  // spot or on-demand
  std::string provider;
  std::string instance_type;
  std::string region;
  std::string gpu_model;
  int gpus_per_node = 0;
  int min_nodes = 0;
  int max_nodes = 0;
  double price_per_node_hour = 0;
  int64_t interruptions = 0;
  bool operator==(const PoolView&) const = default;
};

// GET /api/v1/nodes.
struct NodeListView {
  std::vector<NodeView> items;
  std::vector<PoolView> pools;
  bool operator==(const NodeListView&) const = default;
};

// Where a team stands against the others under its quotas and the fair policy.
struct FairShareView {
  double dominant_share = 0;
  double past_usage_share = 0;
  double weighted_share = 0;
  int position = 0;
  int of = 0;
  bool operator==(const FairShareView&) const = default;
};

// GPUs per model (or quota key); left out when 0.
using GpusByModel = std::map<std::string, double>;

struct QueueStandingView {
  GpusByModel usage, borrowed, lent;
  FairShareView fair_share;
  bool operator==(const QueueStandingView&) const = default;
};

struct BudgetView {
  std::string period;  // day or month
  double budget_usd = 0;
  double spent_usd = 0;
  bool operator==(const BudgetView&) const = default;
};

struct QueueView {
  std::string name;
  double weight = 1;
  std::string cohort;
  GpusByModel quota;  // nominal, per model or "*"; empty = unlimited
  int pending = 0;
  int running = 0;
  double gpus_in_use = 0;
  std::optional<QueueStandingView> standing;
  std::optional<BudgetView> budget;  // null without a budget
  bool operator==(const QueueView&) const = default;
};

// GET /api/v1/queues.
struct QueueListView {
  std::string policy;
  std::vector<QueueView> items;
  bool operator==(const QueueListView&) const = default;
};

nlohmann::json to_json(const NodeListView& v);
nlohmann::json to_json(const QueueListView& v);
nlohmann::json to_json(const QueueStandingView& v);

util::Status from_json(const nlohmann::json& j, NodeListView& out);
util::Status from_json(const nlohmann::json& j, QueueListView& out);

}  // namespace trainyard::model
