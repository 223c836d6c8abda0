// Free capacity of every node during one plan() call: free CPU, memory, milli-GPUs per GPU
// and MIG slice occupancy, with an index of nodes by number of wholly free GPUs per model and
// lists of MIG nodes and of nodes with shared GPUs, so that placement does not scan every
// node. A local, mutable what-if copy: plan() applies tentative starts and releases victims
// here, never in the Snapshot. Thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "model/node.h"
#include "sched/snapshot.h"

namespace trainyard::sched {

struct NodeFree {
  model::CpuMilli cpu{0};
  model::Bytes memory{0};
  int whole_free = 0;  // GPUs with nothing on them (non-MIG nodes)
  std::array<int16_t, model::kMaxGpusPerNode> gpu_milli_free{};
  std::array<uint8_t, model::kMaxGpusPerNode> mig_used{};  // memory-slice bits taken
};

class ClusterState {
 public:
  explicit ClusterState(const Snapshot& snap);

  const Snapshot& snapshot() const { return *snap_; }
  const NodeFree& node(int node_idx) const { return free_[node_idx]; }
  int node_count() const { return static_cast<int>(free_.size()); }
  // Schedulable non-MIG nodes of `gpu_model` with exactly `whole_free` free GPUs.
  std::span<const int32_t> bucket(int gpu_model, int whole_free) const;
  // Whether the node is in one of the buckets (whole GPUs can be placed on it).
  bool in_buckets(int node_idx) const { return pos_[node_idx] >= 0; }
  // Nodes with MIG enabled, ascending: the only ones that can hold a MIG instance.
  std::span<const int32_t> mig_nodes() const { return mig_nodes_; }
  // Nodes with a GPU partly taken by fractional shares, ascending: the only ones where a
  // fractional request can share a GPU rather than take a whole free one.
  std::span<const int32_t> shared_gpu_nodes() const { return shared_gpu_nodes_; }

  // Takes (apply) or gives back (release) what `placement` holds; `worker` says the per-worker
  // CPU and memory, counted once per worker on its node.
  void apply(std::span<const Assignment> placement, const model::WorkerRequest& worker);
  void release(std::span<const Assignment> placement, const model::WorkerRequest& worker);
  // Whether the GPU share of `a` (whole, fraction or MIG slice) is free now.
  bool is_free(const Assignment& a) const;
  // Takes, one by one, the GPU shares of `placement` that are free now (not CPU or memory), for
  // a job that will start there later; returns what was taken (release() it to give it back).
  std::vector<Assignment> hold_free(std::span<const Assignment> placement);

 private:
  void change(std::span<const Assignment> placement, const model::WorkerRequest& worker, int sign);
  void bucket_remove(int node_idx);
  void bucket_insert(int node_idx);
  bool indexed(int node_idx) const;
  void update_shared(int node_idx);

  const Snapshot* snap_;
  std::vector<NodeFree> free_;
  // buckets_[model * (kMaxGpusPerNode + 1) + whole_free] = node indices; pos_ = place in it.
  std::vector<std::vector<int32_t>> buckets_;
  std::vector<int32_t> pos_;
  std::vector<int32_t> mig_nodes_;
  std::vector<int32_t> shared_gpu_nodes_;  // ascending
};

}  // namespace trainyard::sched
