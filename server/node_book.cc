#include "server/node_book.h"

#include <algorithm>

#include "util/status.h"

namespace trainyard::server {

int placed_workers(const Placement& placement) {
  int n = 0;
  for (const Placed& p : placement) n = std::max(n, p.worker + 1);
  return n;
}

bool placed_on(const Placement& placement, util::NodeId node) {
  return std::any_of(placement.begin(), placement.end(),
                     [&](const Placed& p) { return p.node == node; });
}

void NodeBook::add(LocalNode n) {
  auto at = nodes_.end();
  if (n.cloud) {
    at = std::find_if(nodes_.begin(), nodes_.end(),
                      [&](const LocalNode& o) { return o.cloud && o.slot > n.slot; });
  }
  nodes_.insert(at, std::move(n));
  reindex();
}

void NodeBook::remove(util::NodeId id) {
  const int pos = position(id);
  if (pos < 0) return;
  nodes_.erase(nodes_.begin() + pos);
  reindex();
}

void NodeBook::reindex() {
  position_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i)
    position_[nodes_[i].node.id.value()] = static_cast<int>(i);
}

int NodeBook::position(util::NodeId id) const {
  const auto it = position_.find(id.value());
  return it == position_.end() ? -1 : it->second;
}

LocalNode* NodeBook::find(util::NodeId id) {
  const int pos = position(id);
  return pos < 0 ? nullptr : &nodes_[pos];
}

const LocalNode* NodeBook::find(util::NodeId id) const {
  const int pos = position(id);
  return pos < 0 ? nullptr : &nodes_[pos];
}

LocalNode* NodeBook::find(std::string_view name) {
  for (auto& n : nodes_)
    if (n.node.name == name) return &n;
  return nullptr;
}

const LocalNode* NodeBook::find(std::string_view name) const {
  for (const auto& n : nodes_)
    if (n.node.name == name) return &n;
  return nullptr;
}

const LocalNode& NodeBook::of(const Placed& p) const {
  const LocalNode* n = find(p.node);
  TY_CHECK_MSG(n != nullptr, "a placement names a node that left the book");
  return *n;
}

Placement NodeBook::to_placed(const std::vector<sched::Assignment>& assignments) const {
  Placement out;
  out.reserve(assignments.size());
  for (const sched::Assignment& a : assignments) {
    TY_CHECK_MSG(a.node_idx >= 0 && a.node_idx < static_cast<int>(nodes_.size()),
                 "an assignment's node is outside the snapshot");
    out.push_back({.worker = a.worker,
                   .node = nodes_[a.node_idx].node.id,
                   .gpu_idx = a.gpu_idx,
                   .milli = a.milli,
                   .mig_profile = a.mig_profile,
                   .mig_start = a.mig_start});
  }
  return out;
}

std::vector<sched::Assignment> NodeBook::to_assignments(const Placement& placement) const {
  std::vector<sched::Assignment> out;
  out.reserve(placement.size());
  for (const Placed& p : placement) {
    const int pos = position(p.node);
    if (pos >= 0) out.push_back(p.at(pos));
  }
  return out;
}

}  // namespace trainyard::server
