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

void ControlPlane::observe_fleet(Tx& tx) {
  for (const FleetEvent& e : fleet_->poll()) {
    switch (e.kind) {
      case FleetEvent::Kind::Ready:
        fleet_node_ready(e);
        break;
      case FleetEvent::Kind::Notice:
        fleet_node_noticed(e, tx);
        break;
      case FleetEvent::Kind::Gone:
        fleet_node_gone(e, tx);
        break;
      case FleetEvent::Kind::Failed:
        TY_LOG_WARN("fleet: a request for pool {} failed: {}",
                    fleet_->pools()[e.node.pool].pool.name, e.reason);
        break;
    }
  }
}

void ControlPlane::fleet_node_ready(const FleetEvent& e) {
  if (nodes_.find(e.node.name) != nullptr) return;
  LocalNode n = fleet_->local_node(e.node, util::NodeId(next_node_id_++));
  if (auto st = cost_.node_up(n.node.name, n.node.pool, n.node.gpu_count, n.price_per_hour, e.time);
      !st.is_ok())
    TY_LOG_WARN("cost: {}", st.message());
  TY_LOG_INFO("fleet: node {} ready in {} ({} x {}, ${:.4f}/h)", n.node.name, n.zone,
              n.node.gpu_count, n.node.gpu_model, n.price_per_hour);
  nodes_.add(std::move(n));  // in slot order, as the simulator's snapshot holds its nodes
}

void ControlPlane::fleet_node_noticed(const FleetEvent& e, Tx& tx) {
  LocalNode* node = nodes_.find(e.node.name);
  if (node == nullptr) return;  // still provisioning: it never ran anything
  node->node.state = model::NodeState::Draining;
  const util::Duration grace = std::max(util::Duration{0}, e.deadline - clock_.now());
  for (auto& [id, job] : jobs_.active()) {
    if (!placed_on(job.placement, node->node.id) || job.workers.empty()) continue;
    job.interrupted_node = node->node.name;
    begin_stop(job, StopCause::Preempt,
               fmt::format("node {} will be reclaimed by the provider at {} (spot "
                           "interruption notice); grace {:.0f}s",
                           node->node.name, util::format_time(e.deadline), util::to_seconds(grace)),
               tx, e.deadline);
  }
  TY_LOG_INFO("fleet: node {} gets an interruption notice; reclaimed at {}", node->node.name,
              util::format_time(e.deadline));
}

void ControlPlane::fleet_node_gone(const FleetEvent& e, Tx& tx) {
  LocalNode* node = nodes_.find(e.node.name);
  if (node == nullptr) return;
  const std::string& name = node->node.name;
  node->node.state = model::NodeState::Gone;
  if (auto st = cost_.node_down(name, e.time); !st.is_ok()) TY_LOG_WARN("cost: {}", st.message());
  // Workers still on it died with the machine; their job is requeued, not failed.
  for (auto& [id, job] : jobs_.active()) {
    if (!placed_on(job.placement, node->node.id)) continue;
    if (job.stop == StopCause::None && !job.workers.empty()) {
      job.interrupted_node = name;
      begin_stop(job, StopCause::Preempt,
                 fmt::format("node {} was reclaimed by the provider without notice", name), tx,
                 clock_.now());
    }
    for (auto& w : job.workers) kill_worker(w);
  }
  TY_LOG_INFO("fleet: node {} gone ({})", name,
              e.reclaimed ? "reclaimed by the provider" : "released");
}

void ControlPlane::remove_gone_nodes() {
  std::vector<util::NodeId> gone;
  for (const LocalNode& n : nodes_) {
    if (n.node.state != model::NodeState::Gone) continue;
    bool held = false;  // its jobs end first (their workers were killed)
    for (const auto& [id, job] : jobs_.active()) held = held || placed_on(job.placement, n.node.id);
    if (!held) gone.push_back(n.node.id);
  }
  for (util::NodeId id : gone) nodes_.remove(id);
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
    const ActiveJob* job = jobs_.find(up.for_job);
    if (job == nullptr) continue;
    tx.events.push_back(
        {.job = up.for_job,
         .at = now,
         .type = "ScaleUp",
         .to_state = std::string(model::job_state_name(job->rec.state)),
         .attempt = job->rec.attempt,
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
    LocalNode& n = nodes_[r.node_idx];  // the book is as the snapshot had it
    if (!n.cloud || n.node.state != model::NodeState::Ready) continue;
    bool used = false;  // a start of this very plan may land on it
    for (const auto& s : plan.starts)
      for (const auto& a : s.placement) used = used || a.node_idx == r.node_idx;
    for (const auto& [id, job] : jobs_.active()) used = used || placed_on(job.placement, n.node.id);
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
