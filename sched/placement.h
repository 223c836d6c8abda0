// Placement: filter the nodes a job's workers may use, then choose among them by score.
// Filters: node schedulable, GPU model allowed, node selector, MIG profile offered, CPU,
// memory, GPUs. Scores are on a 0-100 scale and depend only on the node's free GPUs after
// placement (Pack = MostAllocated, Spread = LeastAllocated), so the best node is found by
// walking the free-GPU buckets of ClusterState in score order instead of scoring every node.
// Gangs: all workers or none. A job's workers go on one node when they fit there, else on the
// fewest nodes (largest free first, the last one best-fit), inside one rack when one can hold
// them. Pure: reads the state, returns assignments; the caller applies them.
// Spot nodes are open to preemptible jobs only: a reclaim would kill the others.
// Tie-breaks: lower GPU model index, then bucket order (deterministic for a given history).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "sched/cluster_state.h"
#include "sched/policy_config.h"

namespace trainyard::sched {

enum class Fit { Fits, NotNow, Never };

// Filters, as bits in PlaceResult::filter: which requirement removed the last candidates.
enum FilterBit : uint8_t {
  kFilterGpuModel = 1,
  kFilterSelector = 2,
  kFilterCpu = 4,
  kFilterMemory = 8,
  kFilterGpus = 16,
  kFilterMig = 32,
  kFilterUnschedulable = 64,
  kFilterSpot = 128,  // a spot (reclaimable) node, and the job is not preemptible
};

struct PlaceResult {
  Fit fit = Fit::NotNow;
  std::vector<Assignment> placement;
  uint8_t filter = 0;
};

struct PlaceOptions {
  PlacementStrategy strategy = PlacementStrategy::Pack;
  // Per node index, whether its labels match the job's node selector, when the caller keeps
  // that (NodeSelectorIndex); nullptr: the labels are matched here, node by node.
  const std::vector<bool>* selector_matches = nullptr;
  // Per GPU model, the index of the job's MIG profile among the model's profiles (-1: not
  // offered), when the caller keeps that (MigProfileIndex); nullptr: looked up by name.
  const std::vector<int8_t>* mig_profile_by_model = nullptr;
};

// Which nodes each node selector matches, worked out once per distinct selector: a plan asks
// about the same few selectors for thousands of jobs. Holds a reference to the snapshot.
class NodeSelectorIndex {
 public:
  explicit NodeSelectorIndex(const Snapshot& snap) : snap_(&snap) {}
  // nullptr for an empty selector (every node matches). Valid as long as the index.
  const std::vector<bool>* matching(const model::Labels& selector);

 private:
  const Snapshot* snap_;
  std::map<model::Labels, std::vector<bool>> matches_;
};

// Per MIG profile name, its index among each GPU model's profiles (-1 where the model does not
// offer it), worked out once per distinct name: a plan scores every MIG node for each MIG
// worker. Holds a reference to the snapshot.
class MigProfileIndex {
 public:
  explicit MigProfileIndex(const Snapshot& snap) : snap_(&snap) {}
  // nullptr for an empty name (no MIG instance wanted). Valid as long as the index.
  const std::vector<int8_t>* by_model(const std::string& profile);

 private:
  const Snapshot* snap_;
  std::map<std::string, std::vector<int8_t>, std::less<>> by_name_;
};

// 0-100: how full the node would be after taking `taken` of its `total` GPUs (Pack), or how
// empty (Spread).
int placement_score(PlacementStrategy strategy, int total_gpus, int free_after);

// Where the job's workers fit now, or NotNow with the blocking filter. Never is not decided
// here (see never_fits).
PlaceResult place(const SnapshotJob& job, const ClusterState& state, const PlaceOptions& opts);

// How many of the job's workers node `node_idx` could take now, by the rule place() uses to
// decide a fit: for whole GPUs, its whole free GPUs per worker capped by CPU and memory; for a
// job's single fractional, MIG or CPU-only worker, 1 when the node has a spot for it; 0 when a
// filter excludes the node. place() fits exactly when the sum over all nodes reaches
// job.workers, so callers can follow a fit node by node. -1 (undefined) for fractional, MIG
// or CPU-only jobs with several workers.
int64_t node_capacity(const SnapshotJob& job, const ClusterState& state, int node_idx,
                      const PlaceOptions& opts);

// The snapshot's nodes grouped by everything never_fits() reads of a node (GPU model and
// count, MIG, spot, CPU, memory, and whether it matches one node selector, given as
// NodeSelectorIndex's answer; nullptr for jobs without one): a cluster has few kinds of
// nodes, so never_fits() decides per group rather than per node. Built once per plan and
// selector.
class NodeGroups {
 public:
  struct Group {
    int32_t first;  // lowest node index of the group
    int32_t last;   // highest
    int64_t count;
  };
  NodeGroups(const Snapshot& snap, const std::vector<bool>* selector_matches);
  std::span<const Group> groups() const { return groups_; }
  const std::vector<bool>* selector_matches() const { return selector_matches_; }

 private:
  const std::vector<bool>* selector_matches_;
  std::vector<Group> groups_;
};

// True when no node of the snapshot could hold a worker even if the cluster were empty, or the
// matching nodes together are too small for the gang; `filter` says which requirement. Only
// `opts.selector_matches` is read (the strategy does not matter here). With `groups` (of this
// snapshot, for the job's selector as opts.selector_matches gives it), the same answer from
// one node per group.
bool never_fits(const SnapshotJob& job, const Snapshot& snap, uint8_t* filter,
                const PlaceOptions& opts = {}, const NodeGroups* groups = nullptr);

}  // namespace trainyard::sched
