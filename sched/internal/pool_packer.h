// Bin-packing of gangs onto the nodes of one autoscaled pool that are not up yet: those already
// provisioning, those bought earlier in the same autoscale() call, and new ones of the pool's
// shape. First fit, worker by worker, so the nodes bought are what the gangs need and no more.
// Integer quantities only (milli-GPUs, MIG slices, CPU milli, bytes). Internal to sched/.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/node.h"
#include "sched/snapshot.h"

namespace trainyard::sched::internal {

// An empty or partly packed node of the pool's shape.
struct VirtualNode {
  model::CpuMilli cpu{0};
  model::Bytes memory{0};
  std::array<int16_t, model::kMaxGpusPerNode> milli_free{};
  std::array<uint8_t, model::kMaxGpusPerNode> mig_used{};
  bool bought = false;  // bought in this call (else it was provisioning before, or is up)
  int node_idx = -1;    // an idle node that is up: its index in Snapshot::nodes
  bool used = false;    // some worker was packed onto it
};

struct PackResult {
  bool fits = false;
  int new_nodes = 0;       // nodes the gang opened beyond those already coming
  bool on_bought = false;  // some worker went on a node bought in this call
  bool on_coming = false;  // some worker went on a node not up yet (provisioning or bought)
};

class PoolPacker {
 public:
  // Starts with the pool's provisioning nodes, empty.
  PoolPacker(const Snapshot& snap, const SnapshotPool& pool);

  // Whether one worker of `job` fits an empty node of the pool: the kind of GPU request the
  // pool's nodes serve (whole, fractional, MIG profile), allowed model, GPUs, CPU and memory.
  // Node selectors and spot rules are the caller's.
  bool worker_fits_shape(const SnapshotJob& job) const;
  // Packs the whole gang onto the nodes so far, then onto at most `max_new` new ones (bought).
  // Tentative: commit() keeps the result, another pack() or nothing drops it.
  PackResult pack(const SnapshotJob& job, int max_new);
  void commit() { nodes_ = tentative_; }
  // Adds `count` empty nodes bought in this call (the pool's minimum size).
  void add_bought(int count);
  // Adds an idle node that is up (no job on it): a gang that needs more nodes than are idle
  // buys only the difference.
  void add_idle(int node_idx);
  // The idle nodes that are up and that demand was packed onto: not to be released.
  std::vector<int> used_idle_nodes() const;

 private:
  VirtualNode empty_node(bool bought) const;
  bool place_worker(const SnapshotJob& job, VirtualNode& node) const;

  // The MIG profile named `name` of the pool's GPU model, or nullptr.
  const model::MigProfile* mig_profile(const std::string& name) const;

  const SnapshotPool* pool_;
  const model::Accelerator* accel_ = nullptr;  // of the pool's GPU model, when known
  std::vector<VirtualNode> nodes_;
  std::vector<VirtualNode> tentative_;
};

}  // namespace trainyard::sched::internal
