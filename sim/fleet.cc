#include "sim/fleet.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "drive/zone_backoff.h"
#include "sched/autoscale.h"
#include "sched/snapshot_builder.h"

namespace trainyard::sim {

using util::Duration;
using util::Time;

Fleet::Fleet(const CloudScenario& scenario, sched::Snapshot& snap, Occupancy& occupancy)
    : scenario_(scenario), snap_(snap), occupancy_(occupancy), clock_(snap.now) {}

util::Result<std::unique_ptr<Fleet>> Fleet::create(const CloudScenario& scenario,
                                                   sched::Snapshot& snap, Occupancy& occupancy) {
  std::unique_ptr<Fleet> f(new Fleet(scenario, snap, occupancy));
  for (model::Pool pool : scenario.pools) {
    auto offers = cloud::resolve_pool(scenario.offerings, pool, scenario.throughputs.get());
    if (!offers.is_ok()) return offers.status();
    pool.zones = offers->zones;
    const int idx = sched::add_pool(snap, pool);
    PoolState st;
    st.offerings = std::move(*offers);
    st.prior_rate =
        pool.kind == model::PoolKind::Spot
            ? cloud::simcloud_interruption_rate(scenario.offerings[st.offerings.offering.front()],
                                                scenario.advisor, scenario.simcloud)
            : 0.0;
    if (idx != static_cast<int>(f->pools_.size())) {
      return util::internal_error(fmt::format("pool '{}' added out of order", pool.name));
    }
    f->pools_.push_back(std::move(st));
  }
  f->provider_ =
      cloud::make_simcloud(scenario.offerings, scenario.advisor, scenario.simcloud, f->clock_);
  return f;
}

std::optional<Time> Fleet::next_reopen(Time now) const {
  std::optional<Time> next;
  for (const auto& p : snap_.pools) {
    if (p.unavailable_until > now && (!next || p.unavailable_until < *next)) {
      next = p.unavailable_until;
    }
  }
  return next;
}

int Fleet::provisioning() const {
  int n = 0;
  for (const auto& p : snap_.pools) n += p.provisioning;
  return n;
}

util::Status Fleet::apply(const sched::Plan& plan, Time now) {
  clock_.advance_to(std::max(clock_.now(), now));
  for (const auto& r : plan.releases) {
    Slot& s = slots_.at(static_cast<size_t>(r.node_idx));
    if (s.request == 0) continue;
    TY_RETURN_IF_ERROR(provider_->release_node(s.request));
  }
  for (const auto& up : plan.scale_ups) {
    PoolState& ps = pools_.at(static_cast<size_t>(up.pool));
    const size_t zone = up.zone >= 0 ? static_cast<size_t>(up.zone) : 0;
    const sched::SnapshotPool& sp = snap_.pools[up.pool];
    for (int i = 0; i < up.nodes; ++i) {
      cloud::NodeRequest req;
      req.offering = ps.offerings.offering.at(zone);
      req.purchase = sp.kind == model::PoolKind::Spot ? cloud::PurchaseOption::Spot
                                                      : cloud::PurchaseOption::OnDemand;
      req.pool = sp.name;
      auto id = provider_->request_node(req);
      if (!id.is_ok()) return id.status();
      if (static_cast<size_t>(*id) != requests_.size() + 1) {
        return util::internal_error("simcloud request ids are not sequential");
      }
      requests_.push_back(
          {.pool = up.pool, .zone = static_cast<int>(zone), .price = ps.offerings.price.at(zone)});
      ++snap_.pools[up.pool].provisioning;
    }
  }
  return util::Status::ok();
}

util::Result<bool> Fleet::poll(Time now,
                               const std::function<void(const FleetNotice&)>& on_reclaim) {
  clock_.advance_to(std::max(clock_.now(), now));
  bool changed = false;
  // Events can be emitted at the time of the last poll (a release, a refused request), so
  // that instant is read again and what was handled then is skipped.
  const auto events = provider_->poll(polled_ - Duration(1));
  std::vector<std::pair<cloud::RequestId, int>> seen_now;
  for (const auto& e : events) {
    const auto key = std::make_pair(e.request, static_cast<int>(e.kind));
    if (e.time == polled_ && std::find(handled_at_polled_.begin(), handled_at_polled_.end(), key) !=
                                 handled_at_polled_.end())
      continue;
    if (e.time == now) seen_now.push_back(key);
    Request& req = requests_.at(static_cast<size_t>(e.request - 1));
    sched::SnapshotPool& pool = snap_.pools[req.pool];
    switch (e.kind) {
      case cloud::ProviderEventKind::NodeReady:
        TY_RETURN_IF_ERROR(node_ready(e.request, e.time));
        changed = true;
        break;
      case cloud::ProviderEventKind::RequestFailed:
        req.done = true;
        ++refusals_;
        --pool.provisioning;
        drive::refuse_zone(pool, req.zone, e.time, scenario_.spot_retry);
        changed = true;
        break;
      case cloud::ProviderEventKind::InterruptionNotice: {
        if (req.node_idx < 0) break;
        ++interruptions_;
        ++pools_[req.pool].interruptions;
        drive::block_zone(pool, req.zone, e.time + scenario_.zone_backoff);
        snap_.nodes[req.node_idx].schedulable = false;
        on_reclaim({req.node_idx, e.deadline});
        changed = true;
        break;
      }
      case cloud::ProviderEventKind::NodeGone:
        if (req.done) break;
        if (req.node_idx < 0) {  // released while provisioning
          req.done = true;
          --pool.provisioning;
          break;
        }
        node_gone(e.request, e.time);
        changed = true;
        break;
    }
  }
  if (now != polled_) handled_at_polled_.clear();
  handled_at_polled_.insert(handled_at_polled_.end(), seen_now.begin(), seen_now.end());
  polled_ = now;
  return changed;
}

util::Status Fleet::node_ready(cloud::RequestId id, Time now) {
  Request& req = requests_[static_cast<size_t>(id - 1)];
  sched::SnapshotPool& pool = snap_.pools[req.pool];
  --pool.provisioning;
  ++pool.ready;
  PoolState& ps = pools_[req.pool];
  model::Node n;
  n.name = fmt::format("{}-{}", pool.name, ps.next_name++);
  n.pool = pool.name;
  n.gpu_model = snap_.gpu_models[pool.gpu_model];
  n.gpu_count = pool.gpus_per_node;
  n.mig_enabled = pool.mig_enabled;
  n.cpu = pool.cpu;
  n.memory = pool.memory;
  n.labels = pool.labels;
  if (req.zone >= 0 && req.zone < static_cast<int>(pool.zones.size())) {
    n.labels["topology.kubernetes.io/zone"] = pool.zones[req.zone].name;
  }
  n.id = util::NodeId(static_cast<int64_t>(id));
  snap_.now = now;
  sched::add_node(snap_, n);
  int idx = static_cast<int>(snap_.nodes.size()) - 1;
  if (!free_slots_.empty()) {
    const int slot = free_slots_.back();
    free_slots_.pop_back();
    snap_.nodes[slot] = std::move(snap_.nodes.back());
    snap_.nodes.pop_back();
    idx = slot;
  }
  snap_.nodes[idx].idle_since = now;
  if (static_cast<size_t>(idx) >= slots_.size()) slots_.resize(idx + 1);
  slots_[idx] = {.request = id, .up_since = now, .name = n.name};
  req.node_idx = idx;
  occupancy_.add_node(idx);
  ++up_;
  gpus_up_ += n.gpu_count;
  usd_per_hour_ += req.price;
  return ledger_.node_up(n.name, pool.name, n.gpu_count, req.price, now);
}

void Fleet::node_gone(cloud::RequestId id, Time now) {
  Request& req = requests_[static_cast<size_t>(id - 1)];
  req.done = true;
  const int idx = req.node_idx;
  Slot& s = slots_[idx];
  sched::SnapshotPool& pool = snap_.pools[req.pool];
  --pool.ready;
  if (pool.kind == model::PoolKind::Spot) {
    pools_[req.pool].spot_node_hours += util::to_seconds(now - s.up_since) / 3600.0;
  }
  (void)ledger_.node_down(s.name, now);
  --up_;
  gpus_up_ -= snap_.nodes[idx].gpu_count;
  usd_per_hour_ -= req.price;
  occupancy_.remove_node(idx);
  sched::SnapshotNode& n = snap_.nodes[idx];
  n.schedulable = false;
  n.gpu_count = 0;
  n.gpu_model = -1;
  n.pool = -1;
  n.spot = false;
  n.idle_since = Time::max();
  n.labels.clear();
  n.name = "(gone) " + s.name;
  s = Slot{};
  free_slots_.push_back(idx);
}

std::optional<Time> Fleet::set_holders(int node_idx, std::vector<cloud::CostShare> shares,
                                       Time now) {
  const Slot& s = slots_.at(static_cast<size_t>(node_idx));
  sched::SnapshotNode& n = snap_.nodes[node_idx];
  const bool empty = shares.empty();
  (void)ledger_.set_shares(s.name, std::move(shares), now);
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
  (void)ledger_.record_lost_work(s.name, job, team, milli, lost, now, interruption);
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
    node_gone(slots_[i].request, end);
  }
  ledger_.advance(last);
}

bool Fleet::node_is_spot(int node_idx) const {
  return node_idx >= 0 && static_cast<size_t>(node_idx) < snap_.nodes.size() &&
         snap_.nodes[node_idx].spot;
}

// The pool's interruption rate as observed so far, pulled toward the prior until a few dozen
// node-hours have been seen (SCR estimates MTBF the same way: runtime over interruptions).
double Fleet::pool_rate(int pool) const {
  const PoolState& ps = pools_[pool];
  constexpr double kPriorHours = 24.0;
  return (ps.interruptions + ps.prior_rate * kPriorHours) / (ps.spot_node_hours + kPriorHours);
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
