// The nodes the server runs workers on, each under a stable id (model::Node::id), and the
// placements that refer to them by that id: a node joining or leaving never renumbers a
// placement. The scheduler sees the nodes in the book's order: this machine's nodes and batch
// nodes as they came, cloud nodes by their fleet slot (as the simulator's snapshot holds them,
// so placement breaks ties alike). position() and to_placed() translate between a plan's node
// indices and ids for one cycle, during which the book does not change.
// Not thread-safe: owned by ControlPlane and guarded by its mutex.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sched/snapshot.h"
#include "server/local_node.h"
#include "util/ids.h"

namespace trainyard::server {

// One entry of a job's placement as the server keeps it: plan()'s assignment with its node
// named by id rather than by snapshot position.
struct Placed {
  int32_t worker = 0;
  util::NodeId node;
  int16_t gpu_idx = -1;
  int16_t milli = 0;        // milli-GPUs on that GPU (1000 = whole); 0 for MIG
  int8_t mig_profile = -1;  // index into the node accelerator's MIG profiles
  int8_t mig_start = -1;    // first memory slice of the MIG instance
  bool operator==(const Placed&) const = default;

  // The assignment with the node at snapshot position `node_idx`.
  sched::Assignment at(int node_idx) const {
    return {.worker = worker,
            .node_idx = node_idx,
            .gpu_idx = gpu_idx,
            .milli = milli,
            .mig_profile = mig_profile,
            .mig_start = mig_start};
  }
};

using Placement = std::vector<Placed>;

// Workers a placement holds (its highest worker index + 1), as sched::placement_workers().
int placed_workers(const Placement& placement);
// Whether any entry of `placement` is on `node`.
bool placed_on(const Placement& placement, util::NodeId node);

class NodeBook {
 public:
  // Appends `n`; a cloud node (n.cloud) goes before the first cloud node of a higher slot.
  void add(LocalNode n);
  // Removes the node; placements that name it must be gone first.
  void remove(util::NodeId id);

  LocalNode* find(util::NodeId id);
  const LocalNode* find(util::NodeId id) const;
  LocalNode* find(std::string_view name);
  const LocalNode* find(std::string_view name) const;
  // The node of a placement entry; it must be in the book (a held node is never removed).
  const LocalNode& of(const Placed& p) const;

  // The node's position in the scheduler's order this cycle; -1 when it is not in the book.
  int position(util::NodeId id) const;
  // plan()'s assignments, whose nodes are positions in this book's order, as placements.
  Placement to_placed(const std::vector<sched::Assignment>& assignments) const;
  // A placement as assignments to this book's positions (entries of absent nodes dropped).
  std::vector<sched::Assignment> to_assignments(const Placement& placement) const;

  // In the scheduler's order.
  LocalNode& operator[](size_t position) { return nodes_[position]; }
  const LocalNode& operator[](size_t position) const { return nodes_[position]; }
  size_t size() const { return nodes_.size(); }
  bool empty() const { return nodes_.empty(); }
  auto begin() { return nodes_.begin(); }
  auto end() { return nodes_.end(); }
  auto begin() const { return nodes_.begin(); }
  auto end() const { return nodes_.end(); }
  const std::vector<LocalNode>& all() const { return nodes_; }

 private:
  void reindex();

  std::vector<LocalNode> nodes_;
  std::unordered_map<int64_t, int> position_;  // node id -> index into nodes_
};

}  // namespace trainyard::server
