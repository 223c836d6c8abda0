#include "drive/fleet.h"

#include <fmt/format.h>

#include "cloud/pool_offerings.h"
#include "drive/zone_backoff.h"
#include "sched/snapshot_builder.h"
#include "util/log.h"

namespace trainyard::drive {
namespace {

// The fields of a pool's snapshot entry that change as nodes come and go.
void fill(sched::SnapshotPool& sp, const FleetPool& fp) {
  sp.provisioning = fp.provisioning;
  sp.ready = fp.ready;
  sp.unavailable_until = fp.unavailable_until;
  for (size_t z = 0; z < sp.zones.size() && z < fp.zones.size(); ++z)
    sp.zones[z].blocked_until = fp.zones[z].blocked_until;
}

}  // namespace

std::string_view fleet_node_state_name(FleetNodeState s) {
  switch (s) {
    case FleetNodeState::Provisioning:
      return "provisioning";
    case FleetNodeState::Ready:
      return "ready";
    case FleetNodeState::Noticed:
      return "draining";
    case FleetNodeState::Releasing:
      return "terminating";
  }
  return "unknown";
}

util::Result<std::vector<FleetPool>> Fleet::resolve_pools(
    const std::vector<model::Pool>& pools, std::span<const cloud::Offering> offs,
    const cloud::ThroughputTable* throughputs) {
  std::vector<FleetPool> out;
  for (const model::Pool& p : pools) {
    FleetPool fp{.pool = p};
    TY_ASSIGN_OR_RETURN(const cloud::PoolOfferings where,
                        cloud::resolve_pool(offs, fp.pool, throughputs));
    for (size_t z = 0; z < where.offering.size(); ++z) {
      fp.zones.push_back({.name = z < where.zones.size() ? where.zones[z] : "",
                          .offering = where.offering[z],
                          .price_per_hour = where.price[z]});
    }
    if (fp.zones.empty())
      return util::invalid_argument(fmt::format("capacity pool '{}': no offering to buy", p.name));
    fp.pool.zones = where.zones;  // the autoscaler picks among them by index
    fp.pool.labels["node.kubernetes.io/instance-type"] = p.instance_type;
    fp.pool.labels["trainyard.dev/capacity-type"] =
        p.kind == model::PoolKind::Spot ? "spot" : "on-demand";
    const cloud::Offering& first = offs[fp.zones[0].offering];
    if (p.region.empty() && !first.region.empty()) fp.pool.region = first.region;
    out.push_back(std::move(fp));
  }
  return out;
}

Fleet::Fleet(std::vector<FleetPool> pools, cloud::ProviderPtr provider, const util::Clock& clock,
             FleetOptions options)
    : pools_(std::move(pools)),
      provider_(std::move(provider)),
      clock_(clock),
      options_(options),
      last_poll_(clock.now()),
      next_number_(pools_.size(), 0) {}

FleetNode* Fleet::find_mut(const std::string& node) {
  for (auto& [id, n] : nodes_)
    if (n.name == node) return &n;
  return nullptr;
}

const FleetNode* Fleet::find(const std::string& node) const {
  return const_cast<Fleet*>(this)->find_mut(node);
}

// A node in `zone` is being taken back: counted, and its zone avoided for a while.
void Fleet::reclaimed(FleetPool& pool, int zone, util::Time t) {
  block_zone(pool, zone, t + options_.zone_backoff);
  ++pool.interruptions;
}

void Fleet::gone(FleetNode& n) {
  FleetPool& pool = pools_[n.pool];
  if (n.state == FleetNodeState::Provisioning) {
    --pool.provisioning;
  } else {
    --pool.ready;
    free_slots_.push_back(n.slot);
    --up_;
    gpus_up_ -= pool.pool.gpus_per_node;
    usd_per_hour_ -= n.price_per_hour;
  }
}

std::vector<FleetEvent> Fleet::poll() {
  const util::Time now = clock_.now();
  std::vector<FleetEvent> out = std::move(injected_);
  injected_.clear();
  release_forced_reclaims(now);
  // From just before the last poll: a release or request made after it in the same microsecond
  // emits events at that time. Each handler checks the node's state, so every event is applied
  // once however often it is read.
  for (const cloud::ProviderEvent& e : provider_->poll(last_poll_ - util::Duration(1))) {
    auto it = nodes_.find(e.request);
    if (it == nodes_.end()) continue;  // gone already
    FleetNode& n = it->second;
    std::optional<FleetEvent> fe = apply_event(e, n);
    if (!fe) continue;
    fe->node = n;
    if (fe->kind == FleetEvent::Kind::Gone || fe->kind == FleetEvent::Kind::Failed)
      nodes_.erase(it);
    out.push_back(std::move(*fe));
  }
  last_poll_ = now;
  return out;
}

// Forced reclaims whose notice has run out: give the node back as the provider would take it.
void Fleet::release_forced_reclaims(util::Time now) {
  for (auto it = forced_.begin(); it != forced_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    if (auto st = provider_->release_node(it->first); !st.is_ok())
      TY_LOG_WARN("fleet: reclaiming request {}: {}", it->first, st.message());
    it = forced_.erase(it);
  }
}

std::optional<FleetEvent> Fleet::apply_event(const cloud::ProviderEvent& e, FleetNode& n) {
  FleetPool& pool = pools_[n.pool];
  FleetEvent fe{.time = e.time, .reason = e.reason};
  switch (e.kind) {
    case cloud::ProviderEventKind::NodeReady:
      if (n.state != FleetNodeState::Provisioning) return std::nullopt;
      node_ready(n, e.time);
      fe.kind = FleetEvent::Kind::Ready;
      break;
    case cloud::ProviderEventKind::InterruptionNotice:
      if (n.state != FleetNodeState::Ready) return std::nullopt;
      n.state = FleetNodeState::Noticed;
      n.deadline = e.deadline;
      reclaimed(pool, n.zone, e.time);
      fe.kind = FleetEvent::Kind::Notice;
      fe.deadline = e.deadline;
      break;
    case cloud::ProviderEventKind::NodeGone:
      fe.kind = FleetEvent::Kind::Gone;
      fe.reclaimed = n.state != FleetNodeState::Releasing || n.forced;
      // Taken without a notice (none reached us): counted and avoided as after a notice.
      if (fe.reclaimed && n.state != FleetNodeState::Noticed) reclaimed(pool, n.zone, e.time);
      gone(n);
      break;
    case cloud::ProviderEventKind::RequestFailed:
      fe.kind = FleetEvent::Kind::Failed;
      ++refusals_;
      refuse_zone(pool, n.zone, e.time, options_.refusal_backoff);
      gone(n);
      break;
  }
  return fe;
}

// A provisioning node is up: it takes the slot of the node gone last (or a new one) and counts.
void Fleet::node_ready(FleetNode& n, util::Time t) {
  FleetPool& pool = pools_[n.pool];
  n.state = FleetNodeState::Ready;
  n.ready_at = t;
  if (free_slots_.empty()) {
    n.slot = slots_++;
  } else {
    n.slot = free_slots_.back();
    free_slots_.pop_back();
  }
  --pool.provisioning;
  ++pool.ready;
  ++up_;
  gpus_up_ += pool.pool.gpus_per_node;
  usd_per_hour_ += n.price_per_hour;
}

void Fleet::update_pools(sched::Snapshot& snap) const {
  for (size_t i = 0; i < pools_.size(); ++i) fill(snap.pools[i], pools_[i]);
}

void Fleet::add_pools(sched::Snapshot& snap) const {
  for (const FleetPool& fp : pools_) fill(snap.pools[sched::add_pool(snap, fp.pool)], fp);
}

util::Result<std::vector<std::string>> Fleet::scale_up(const sched::ScaleUpAction& action) {
  std::vector<std::string> names;
  if (action.pool < 0 || action.pool >= static_cast<int>(pools_.size())) return names;
  FleetPool& pool = pools_[action.pool];
  const int zone =
      action.zone >= 0 && action.zone < static_cast<int>(pool.zones.size()) ? action.zone : 0;
  for (int i = 0; i < action.nodes; ++i) {
    TY_ASSIGN_OR_RETURN(const cloud::RequestId id,
                        provider_->request_node({.offering = pool.zones[zone].offering,
                                                 .purchase = pool.pool.kind == model::PoolKind::Spot
                                                                 ? cloud::PurchaseOption::Spot
                                                                 : cloud::PurchaseOption::OnDemand,
                                                 .pool = pool.pool.name}));
    FleetNode n{.request = id,
                .name = fmt::format("{}-{}", pool.pool.name, ++next_number_[action.pool]),
                .pool = action.pool,
                .zone = zone,
                .price_per_hour = pool.zones[zone].price_per_hour,
                .requested = clock_.now()};
    ++pool.provisioning;
    names.push_back(n.name);
    nodes_.emplace(id, std::move(n));
  }
  return names;
}

util::Status Fleet::release(const std::string& node) {
  FleetNode* n = find_mut(node);
  if (n == nullptr) return util::not_found(fmt::format("node {} is not in the fleet", node));
  if (n->state == FleetNodeState::Releasing) return util::Status::ok();
  n->state = FleetNodeState::Releasing;
  return provider_->release_node(n->request);
}

util::Status Fleet::force_interruption(const std::string& node, util::Duration notice) {
  FleetNode* n = find_mut(node);
  if (n == nullptr) return util::not_found(fmt::format("node {} is not in the fleet", node));
  if (n->state != FleetNodeState::Ready)
    return util::failed_precondition(
        fmt::format("node {} is {}; only a ready node can be interrupted", node,
                    fleet_node_state_name(n->state)));
  const util::Time now = clock_.now();
  n->state = FleetNodeState::Noticed;
  n->forced = true;
  n->deadline = now + notice;
  reclaimed(pools_[n->pool], n->zone, now);
  forced_[n->request] = n->deadline;
  injected_.push_back({.kind = FleetEvent::Kind::Notice,
                       .node = *n,
                       .time = now,
                       .deadline = n->deadline,
                       .reason = "interruption forced through the API"});
  return util::Status::ok();
}

model::Node Fleet::node_spec(const FleetNode& n) const {
  const model::Pool& p = pools_[n.pool].pool;
  model::Node out{.name = n.name,
                  .pool = p.name,
                  .gpu_model = p.gpu_model,
                  .gpu_count = p.gpus_per_node,
                  .mig_enabled = p.mig_enabled,
                  .cpu = p.cpu,
                  .memory = p.memory,
                  .labels = p.labels};
  if (n.zone >= 0 && !pools_[n.pool].zones[n.zone].name.empty())
    out.labels["topology.kubernetes.io/zone"] = pools_[n.pool].zones[n.zone].name;
  return out;
}

std::optional<util::Time> Fleet::next_reopen(util::Time now) const {
  std::optional<util::Time> next;
  for (const FleetPool& p : pools_) {
    if (p.unavailable_until > now && (!next || p.unavailable_until < *next))
      next = p.unavailable_until;
  }
  return next;
}

}  // namespace trainyard::drive
