// A Slurm cluster's nodes as the scheduler's nodes. Slurm owns them: their GPU model (GRES type
// through the mapping table), CPUs, memory, features (labels) and state come from its latest
// answer every cycle; a node that is down, drained or failing takes no work; GPUs that jobs
// outside trainyard hold there count as busy. Index stability: placements refer to nodes_ by
// index, so nodes are only ever appended; one Slurm stops listing stays, unschedulable.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/labels.h"
#include "server/control_plane.h"
#include "util/log.h"

namespace trainyard::server {
namespace {

// Slurm features as labels: `slurm.feature/<name>: "true"`; partitions likewise.
model::Labels labels_of(const exec::SlurmNodeView& v) {
  model::Labels labels;
  for (const auto& f : v.features) labels["slurm.feature/" + f] = "true";
  for (const auto& p : v.partitions) labels["slurm.partition/" + p] = "true";
  labels["trainyard.dev/executor"] = "slurm";
  return labels;
}

LocalNode batch_node(const std::string& name, int64_t id) {
  LocalNode n;
  n.batch = true;
  n.node.id = util::NodeId(id);
  n.node.name = name;
  n.node.state = model::NodeState::Draining;
  return n;
}

void set_gpus(LocalNode& n, int count) {
  n.node.gpu_count = count;
  n.gpus.clear();
  for (int g = 0; g < count; ++g) {
    telemetry::GpuDevice d;
    d.index = g;
    // Slurm picks the device on the node; this only names the slot trainyard accounts for.
    d.uuid = fmt::format("slurm-{}-gpu{}", n.node.name, g);
    d.name = n.node.gpu_model;
    n.gpus.push_back(std::move(d));
  }
}

}  // namespace

std::filesystem::path ControlPlane::work_dir() const {
  return options_.work_dir.empty() ? options_.state_dir : options_.work_dir;
}

void ControlPlane::sync_batch_nodes() {
  if (options_.slurm == nullptr) return;
  const exec::SlurmClusterView view = options_.slurm->cluster();
  if (!view.reachable) {
    // Nothing new can start while Slurm does not answer; what runs keeps running.
    for (auto& n : nodes_) {
      if (!n.batch) continue;
      n.node.state = model::NodeState::Draining;
      n.problem = "Slurm is not answering: " + view.error;
    }
    return;
  }
  std::map<std::string, const exec::SlurmNodeView*> by_name;
  for (const auto& v : view.nodes) by_name[v.name] = &v;
  for (auto& n : nodes_) {
    if (n.batch && !by_name.contains(n.node.name)) {
      n.node.state = model::NodeState::Draining;
      n.problem = "Slurm no longer lists it in the partition";
      n.gpus_held_outside = 0;
    }
  }
  for (const auto& v : view.nodes) {
    LocalNode* n = nodes_.find(v.name);
    if (n == nullptr) {
      LocalNode added = batch_node(v.name, next_node_id_++);
      const util::NodeId id = added.node.id;
      nodes_.add(std::move(added));
      n = nodes_.find(id);
      TY_LOG_INFO("Slurm node {}: {} x {} ({}), {} CPUs, {} MB", v.name, v.gpus,
                  v.accelerator.empty() ? v.gres_type : v.accelerator, v.state, v.cpus,
                  v.memory_mb);
    }
    describe_batch_node(*n, v);
  }
}

void ControlPlane::describe_batch_node(LocalNode& n, const exec::SlurmNodeView& v) {
  // GPUs trainyard placed there, by slot.
  uint32_t ours = 0;
  for (const auto& [id, job] : jobs_.active())
    for (const Placed& a : job.placement)
      if (a.node == n.node.id && a.gpu_idx >= 0 && a.gpu_idx < 32) ours |= 1u << a.gpu_idx;
  const int gpus = std::min(v.gpus, model::kMaxGpusPerNode);
  if (gpus != n.node.gpu_count || v.accelerator != n.node.gpu_model) {
    if (ours == 0 || gpus >= n.node.gpu_count) {
      n.node.gpu_model = v.accelerator.empty() ? v.gres_type : v.accelerator;
      set_gpus(n, gpus);
    }
  }
  n.address = v.address;
  n.node.cpu = model::CpuMilli(v.cpus * 1000);
  n.node.memory = model::Bytes(v.memory_mb << 20);
  n.node.labels = labels_of(v);
  n.problem = v.problem;
  n.node.state = v.usable ? model::NodeState::Ready : model::NodeState::Draining;
  // What others hold: the highest free slots, so trainyard's own placements keep theirs.
  uint32_t held = 0;
  int left = v.gpus_used_by_others;
  for (int g = n.node.gpu_count - 1; g >= 0 && left > 0; --g) {
    if ((ours >> g) & 1u) continue;
    held |= 1u << g;
    --left;
  }
  n.gpus_held_outside = held;
  n.cpu_held_outside_milli = v.cpus_used_by_others * 1000;
}

void ControlPlane::ensure_placeholder_nodes(const std::string& placement_json) {
  if (options_.slurm == nullptr) return;
  const auto placement = nlohmann::json::parse(placement_json, nullptr, false);
  if (!placement.is_array()) return;
  for (const auto& a : placement) {
    if (!a.is_object() || !a.contains("node") || !a["node"].is_string()) continue;
    const std::string name = a["node"].get<std::string>();
    LocalNode* n = nodes_.find(name);
    if (n == nullptr) {
      LocalNode added = batch_node(name, next_node_id_++);
      added.problem = "not yet described by Slurm";
      const util::NodeId id = added.node.id;
      nodes_.add(std::move(added));
      n = nodes_.find(id);
    }
    const int gpu = a.value("gpu", -1);
    if (gpu >= 0 && gpu < model::kMaxGpusPerNode && gpu >= n->node.gpu_count) set_gpus(*n, gpu + 1);
  }
}

}  // namespace trainyard::server
