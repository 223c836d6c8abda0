#include "sim/fleet.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sched/autoscale.h"
#include "sched/snapshot_builder.h"

namespace trainyard::sim {

using util::Duration;
using util::Time;

Fleet::Fleet(const CloudScenario& scenario, sched::Snapshot& snap, Occupancy& occupancy)
    : scenario_(scenario), snap_(snap), occupancy_(occupancy), clock_(snap.now) {}

util::Result<std::unique_ptr<Fleet>> Fleet::create(const CloudScenario& scenario,
                                                   sched::Snapshot& snap, Occupancy& occupancy) {
  if (!snap.pools.empty()) return util::internal_error("cloud pools must come first");
  std::unique_ptr<Fleet> f(new Fleet(scenario, snap, occupancy));
  TY_ASSIGN_OR_RETURN(auto pools, drive::Fleet::resolve_pools(scenario.pools, scenario.offerings,
                                                              scenario.throughputs.get()));
  for (const drive::FleetPool& p : pools) {
    f->prior_rate_.push_back(
        p.pool.kind == model::PoolKind::Spot
            ? cloud::simcloud_interruption_rate(scenario.offerings[p.zones.front().offering],
                                                scenario.advisor, scenario.simcloud)
            : 0.0);
  }
  f->spot_node_hours_.assign(pools.size(), 0.0);
  f->cloud_ = std::make_unique<drive::Fleet>(
      std::move(pools),
      cloud::make_simcloud(scenario.offerings, scenario.advisor, scenario.simcloud, f->clock_),
      f->clock_,
      drive::FleetOptions{.zone_backoff = scenario.zone_backoff,
                          .refusal_backoff = scenario.spot_retry});
  f->cloud_->add_pools(snap);
  return f;
}

util::Status Fleet::apply(const sched::Plan& plan, Time now) {
  clock_.advance_to(std::max(clock_.now(), now));
  for (const auto& r : plan.releases) {
    const Slot& s = slots_.at(static_cast<size_t>(r.node_idx));
    if (s.request != 0) TY_RETURN_IF_ERROR(cloud_->release(s.name));
  }
  for (const auto& up : plan.scale_ups) TY_RETURN_IF_ERROR(cloud_->scale_up(up).status());
  cloud_->update_pools(snap_);
  return util::Status::ok();
}

util::Result<bool> Fleet::poll(Time now,
                               const std::function<void(const FleetNotice&)>& on_reclaim) {
  clock_.advance_to(std::max(clock_.now(), now));
  bool changed = false;
  for (const drive::FleetEvent& e : cloud_->poll()) {
    const auto up = node_of_.find(e.node.request);
    switch (e.kind) {
      case drive::FleetEvent::Kind::Ready:
        TY_RETURN_IF_ERROR(node_ready(e.node, e.time));
        break;
      case drive::FleetEvent::Kind::Failed:
        break;
      case drive::FleetEvent::Kind::Notice:
        if (up == node_of_.end()) continue;
        snap_.nodes[up->second].schedulable = false;
        on_reclaim({up->second, e.deadline});
        break;
      case drive::FleetEvent::Kind::Gone:
        if (up == node_of_.end()) continue;  // released while provisioning
        node_gone(up->second, e.time);
        break;
    }
    changed = true;
  }
  cloud_->update_pools(snap_);
  return changed;
}

util::Status Fleet::node_ready(const drive::FleetNode& fn, Time now) {
  model::Node n = cloud_->node_spec(fn);
  n.id = util::NodeId(fn.request);
  snap_.now = now;
  sched::add_node(snap_, n);
  const int idx = fn.slot;  // the snapshot holds the fleet's nodes alone, each in its slot
  if (idx + 1 < static_cast<int>(snap_.nodes.size())) {
    snap_.nodes[idx] = std::move(snap_.nodes.back());
    snap_.nodes.pop_back();
  }
  snap_.nodes[idx].idle_since = now;
  if (static_cast<size_t>(idx) >= slots_.size()) slots_.resize(idx + 1);
  slots_[idx] = {.request = fn.request, .up_since = now, .name = n.name};
  node_of_[fn.request] = idx;
  occupancy_.add_node(idx);
  return cost_.node_up(n.name, n.pool, n.gpu_count, fn.price_per_hour, now);
}

void Fleet::node_gone(int idx, Time now) {
  Slot& s = slots_[idx];
  sched::SnapshotNode& n = snap_.nodes[idx];
  if (n.spot) spot_node_hours_[n.pool] += util::to_seconds(now - s.up_since) / 3600.0;
  (void)cost_.node_down(s.name, now);
  occupancy_.remove_node(idx);
  n.schedulable = false;
  n.gpu_count = 0;
  n.gpu_model = -1;
  n.pool = -1;
  n.spot = false;
  n.idle_since = Time::max();
  n.labels.clear();
  n.name = "(gone) " + s.name;
  node_of_.erase(s.request);
  s = Slot{};
}

std::optional<Time> Fleet::set_holders(int node_idx, std::vector<cloud::CostShare> shares,
                                       Time now) {
  const Slot& s = slots_.at(static_cast<size_t>(node_idx));
  sched::SnapshotNode& n = snap_.nodes[node_idx];
  const bool empty = shares.empty();
  (void)cost_.set_holders(s.name, std::move(shares), now);
  if (!empty) {
    n.idle_since = Time::max();
    return std::nullopt;
  }
  n.idle_since = now;
  if (n.pool < 0) return std::nullopt;
  const Duration timeout = snap_.pools[n.pool].idle_timeout;
  if (timeout <= Duration(0)) return std::nullopt;
  return now + timeout;
}

void Fleet::record_lost_work(int node_idx, const std::string& job, const std::string& team,
                             int64_t milli, Duration lost, Time now, bool interruption) {
  const Slot& s = slots_.at(static_cast<size_t>(node_idx));
  if (s.request == 0) return;
  (void)cost_.record_lost_work(s.name, job, team, milli, lost, now, interruption);
}

void Fleet::close(Time now) {
  // The run ends with the last job, but the fleet would not: an idle node stays billed until
  // its pool's idle timeout gives it back, so the books close there.
  Time last = now;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].request == 0) continue;
    const sched::SnapshotNode& n = snap_.nodes[i];
    Time end = now;
    if (n.pool >= 0 && n.idle_since != Time::max() &&
        snap_.pools[n.pool].idle_timeout > Duration(0)) {
      end = std::max(now, n.idle_since + snap_.pools[n.pool].idle_timeout);
    }
    last = std::max(last, end);
    node_gone(static_cast<int>(i), end);
  }
  cost_.ledger().advance(last);
}

std::optional<Time> Fleet::next_wake(Time now, bool jobs_wait) const {
  std::optional<Time> next = cloud_->next_event();
  if (next && *next <= now) next.reset();
  if (auto reopen = cloud_->next_reopen(now); jobs_wait && reopen && (!next || *reopen < *next))
    next = reopen;
  return next;
}

int Fleet::interruptions() const {
  int n = 0;
  for (const drive::FleetPool& p : cloud_->pools()) n += p.interruptions;
  return n;
}

// The pool's interruption rate as observed so far, pulled toward the prior until a few dozen
// node-hours have been seen (SCR estimates MTBF the same way: runtime over interruptions).
double Fleet::pool_rate(int pool) const {
  constexpr double kPriorHours = 24.0;
  return (cloud_->pools()[pool].interruptions + prior_rate_[pool] * kPriorHours) /
         (spot_node_hours_[pool] + kPriorHours);
}

Duration Fleet::checkpoint_interval(int node_idx, int nodes, Duration job_spec_interval) const {
  switch (scenario_.checkpoints) {
    case CheckpointPolicy::None:
      return Duration(0);
    case CheckpointPolicy::JobSpec:
      return job_spec_interval;
    case CheckpointPolicy::Young: {
      const int pool = snap_.nodes[node_idx].pool;
      if (pool < 0 || snap_.pools[pool].kind != model::PoolKind::Spot) return job_spec_interval;
      return sched::young_checkpoint_interval(scenario_.checkpoint_cost,
                                              pool_rate(pool) * std::max(1, nodes));
    }
  }
  return Duration(0);
}

}  // namespace trainyard::sim
