// The capacity loop's side of the reconcile cycle: the fleet's ready nodes join the cluster,
// interruption notices stop the jobs on a node before the provider takes it (the existing
// preemption path: notice file and signal, checkpoint, requeue with attempt + 1), gone nodes
// leave once nothing holds them, and the plan's scale-ups and releases go to the provider.
#include <fmt/format.h>

#include "server/control_plane.h"
#include "server/fleet.h"
#include "server/tx.h"
#include "util/log.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

int ControlPlane::node_index(const std::string& name) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].node.name == name) return static_cast<int>(i);
  return -1;
}

util::Time ControlPlane::ledger_time(util::Time t) {
  ledger_time_ = std::max(ledger_time_, t);
  return ledger_time_;
}

void ControlPlane::observe_fleet(Tx& tx) {
  const util::Time now = clock_.now();
  for (const FleetEvent& e : fleet_->poll()) {
    const std::string& name = e.node.name;
    const int idx = node_index(name);
    switch (e.kind) {
      case FleetEvent::Kind::Ready: {
        if (idx >= 0) break;
        LocalNode n = fleet_->local_node(e.node, util::NodeId(next_node_id_++));
        const util::Time t = ledger_time(e.time);
        if (auto st =
                ledger_.node_up(n.node.name, n.node.pool, n.node.gpu_count, n.price_per_hour, t);
            !st.is_ok())
          TY_LOG_WARN("cost: {}", st.message());
        shares_[n.node.name] = {};
        idle_since_[n.node.name] = e.time;
        TY_LOG_INFO("fleet: node {} ready in {} ({} x {}, ${:.4f}/h)", n.node.name, n.zone,
                    n.node.gpu_count, n.node.gpu_model, n.price_per_hour);
        // In slot order, as the simulator's snapshot holds its nodes, so placement breaks ties
        // alike; a node inserted before others moves their placements' indices up.
        size_t at = nodes_.size();
        for (size_t i = 0; i < nodes_.size() && at == nodes_.size(); ++i)
          if (nodes_[i].cloud && nodes_[i].slot > n.slot) at = i;
        nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(at), std::move(n));
        for (auto& [id, job] : active_)
          for (auto& a : job.placement)
            if (a.node_idx >= static_cast<int>(at)) ++a.node_idx;
        break;
      }
      case FleetEvent::Kind::Notice: {
        if (idx < 0) break;  // still provisioning: it never ran anything
        nodes_[idx].node.state = model::NodeState::Draining;
        const util::Duration grace = std::max(util::Duration{0}, e.deadline - now);
        for (auto& [id, job] : active_) {
          bool here = false;
          for (const auto& a : job.placement) here = here || a.node_idx == idx;
          if (!here || job.workers.empty()) continue;
          job.interrupted_node = name;
          begin_stop(job, StopCause::Preempt,
                     fmt::format("node {} will be reclaimed by the provider at {} (spot "
                                 "interruption notice); grace {:.0f}s",
                                 name, util::format_time(e.deadline), util::to_seconds(grace)),
                     tx, e.deadline);
        }
        TY_LOG_INFO("fleet: node {} gets an interruption notice; reclaimed at {}", name,
                    util::format_time(e.deadline));
        break;
      }
      case FleetEvent::Kind::Gone: {
        if (idx < 0) break;
        nodes_[idx].node.state = model::NodeState::Gone;
        if (auto st = ledger_.node_down(name, ledger_time(e.time)); !st.is_ok())
          TY_LOG_WARN("cost: {}", st.message());
        shares_.erase(name);
        idle_since_.erase(name);
        // Workers still on it died with the machine; their job is requeued, not failed.
        for (auto& [id, job] : active_) {
          bool here = false;
          for (const auto& a : job.placement) here = here || a.node_idx == idx;
          if (!here) continue;
          if (job.stop == StopCause::None && !job.workers.empty()) {
            job.interrupted_node = name;
            begin_stop(job, StopCause::Preempt,
                       fmt::format("node {} was reclaimed by the provider without notice", name),
                       tx, now);
          }
          for (auto& w : job.workers) kill_worker(w);
        }
        TY_LOG_INFO("fleet: node {} gone ({})", name,
                    e.reclaimed ? "reclaimed by the provider" : "released");
        break;
      }
      case FleetEvent::Kind::Failed:
        TY_LOG_WARN("fleet: a request for pool {} failed: {}",
                    fleet_->pools()[e.node.pool].pool.name, e.reason);
        break;
    }
  }
}

void ControlPlane::remove_gone_nodes() {
  for (int idx = static_cast<int>(nodes_.size()) - 1; idx >= 0; --idx) {
    if (nodes_[idx].node.state != model::NodeState::Gone) continue;
    bool held = false;
    for (const auto& [id, job] : active_)
      for (const auto& a : job.placement) held = held || a.node_idx == idx;
    if (held) continue;  // its jobs end first (their workers were killed)
    nodes_.erase(nodes_.begin() + idx);
    for (auto& [id, job] : active_)
      for (auto& a : job.placement)
        if (a.node_idx > idx) --a.node_idx;
  }
}

void ControlPlane::apply_capacity(const sched::Plan& plan, const sched::Snapshot& snap, Tx& tx) {
  const util::Time now = clock_.now();
  for (const auto& up : plan.scale_ups) {
    const auto names = fleet_->scale_up(up);
    if (names.empty()) continue;
    const FleetPool& pool = fleet_->pools()[up.pool];
    const std::string zone = up.zone >= 0 && up.zone < static_cast<int>(pool.zones.size())
                                 ? pool.zones[up.zone].name
                                 : pool.zones[0].name;
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    TY_LOG_INFO("fleet: requested {} in {} for job {}", list, zone, up.for_job.value());
    auto it = active_.find(up.for_job);
    if (it == active_.end()) continue;
    tx.events.push_back(
        {.job = up.for_job,
         .at = now,
         .type = "ScaleUp",
         .to_state = std::string(model::job_state_name(it->second.rec.state)),
         .attempt = it->second.rec.attempt,
         .reason = fmt::format("requested node {} from pool {} ({} {}, zone {}, ${:.4f}/h)", list,
                               pool.pool.name,
                               pool.pool.kind == model::PoolKind::Spot ? "spot" : "on-demand",
                               pool.pool.instance_type, zone,
                               up.zone >= 0 && up.zone < static_cast<int>(pool.zones.size())
                                   ? pool.zones[up.zone].price_per_hour
                                   : pool.pool.price_per_node_hour)});
  }
  for (const auto& r : plan.releases) {
    if (r.node_idx < 0 || r.node_idx >= static_cast<int>(nodes_.size())) continue;
    LocalNode& n = nodes_[r.node_idx];
    if (!n.cloud || n.node.state != model::NodeState::Ready) continue;
    bool used = false;  // a start of this very plan may land on it
    for (const auto& s : plan.starts)
      for (const auto& a : s.placement) used = used || a.node_idx == r.node_idx;
    for (const auto& [id, job] : active_)
      for (const auto& a : job.placement) used = used || a.node_idx == r.node_idx;
    if (used) continue;
    if (auto st = fleet_->release(n.node.name); !st.is_ok()) {
      TY_LOG_WARN("fleet: releasing {}: {}", n.node.name, st.message());
      continue;
    }
    n.node.state = model::NodeState::Terminating;
    TY_LOG_INFO("fleet: releasing {} (idle since {})", n.node.name,
                util::format_time(snap.nodes[r.node_idx].idle_since));
  }
}

util::Result<nlohmann::json> ControlPlane::interrupt_node(const std::string& name,
                                                          const Principal& who) {
  if (!who.admin)
    return util::Status(util::StatusCode::PermissionDenied,
                        "only an admin may interrupt a node (a test and demo aid)");
  nlohmann::json out;
  {
    util::MutexLock lock(mu_);
    if (!fleet_)
      return util::failed_precondition(
          "this server has no cloud pools (capacity.provider: simcloud with pools); only their "
          "nodes can be interrupted");
    TY_RETURN_IF_ERROR(fleet_->force_interruption(name));
    const FleetNode* n = fleet_->find(name);
    out = {{"node", name}, {"deadline", util::format_time(n->deadline)}};
    wake_ = true;
    loop_cv_.notify_all();
  }
  return out;
}

}  // namespace trainyard::server
