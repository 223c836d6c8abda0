// The fleet (fleet.h): pool resolution against the catalog, the provider's events applied to
// the nodes, and the plan's scale-ups and releases turned into provider requests.
#include "server/fleet.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "cloud/catalog.h"
#include "cloud/pool_offerings.h"
#include "cloud/simcloud.h"
#include "cloud/spot_advisor.h"
#include "drive/zone_backoff.h"
#include "model/accelerator.h"
#include "sched/snapshot_builder.h"
#include "util/log.h"

namespace trainyard::server {
namespace {

cloud::SimCloudOptions simcloud_options(const CapacityConfig& c) {
  cloud::SimCloudOptions o;
  o.seed = c.seed;
  o.default_provisioning_delay = c.provisioning_delay;
  o.provisioning_delay.clear();
  if (c.notice) {
    for (auto& [provider, lead] : o.notice_lead) lead = *c.notice;
    for (const auto& p : c.pools) o.notice_lead[p.provider] = *c.notice;
  }
  if (c.interruption_rate_per_hour) {
    // An exact rate: every offering falls back to one bucket (the advisor is left empty), and
    // the scale turns that bucket's rate into the one asked for.
    o.default_interruption_bucket = 1;
    o.interruption_rate_scale =
        *c.interruption_rate_per_hour / cloud::interruption_rate_per_hour(1);
  }
  return o;
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
    FleetPool fp;
    fp.pool = p;
    // The simulator resolves pools the same way, so both buy the same machines at one price.
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
    const cloud::Offering& first = offs[fp.zones[0].offering];
    fp.pool.labels["node.kubernetes.io/instance-type"] = p.instance_type;
    fp.pool.labels["trainyard.dev/capacity-type"] =
        p.kind == model::PoolKind::Spot ? "spot" : "on-demand";
    if (p.region.empty() && !first.region.empty()) fp.pool.region = first.region;
    out.push_back(std::move(fp));
  }
  return out;
}

util::Result<std::unique_ptr<Fleet>> Fleet::open(const CapacityConfig& config,
                                                 const util::Clock& clock) {
  TY_ASSIGN_OR_RETURN(auto catalog, cloud::load_catalog(config.catalog));
  if (catalog.offerings.empty())
    return util::invalid_argument(fmt::format(
        "capacity.catalog: no offerings in {}; point it at a folder of <provider>_*.csv price "
        "catalogs (the repository's ../shared/catalog)",
        config.catalog));
  std::optional<cloud::ThroughputTable> throughputs;
  const std::string table = config.throughputs.value_or(std::string(kDefaultThroughputs));
  if (!table.empty() && (config.throughputs || std::filesystem::exists(table))) {
    auto loaded = cloud::ThroughputTable::load_gavel(table);
    if (!loaded.is_ok())
      return util::invalid_argument("capacity.throughputs: " + loaded.status().message());
    throughputs = std::move(*loaded);
  }
  TY_ASSIGN_OR_RETURN(auto pools, resolve_pools(config.pools, catalog.offerings,
                                                throughputs ? &*throughputs : nullptr));
  cloud::SpotAdvisor advisor;
  const auto advisor_path = std::filesystem::path(config.catalog) / "aws_spot_advisor_gpu.csv";
  if (!config.interruption_rate_per_hour && std::filesystem::exists(advisor_path)) {
    TY_ASSIGN_OR_RETURN(advisor, cloud::load_spot_advisor(advisor_path.string()));
  }
  auto provider = cloud::make_simcloud(std::move(catalog.offerings), std::move(advisor),
                                       simcloud_options(config), clock);
  return std::make_unique<Fleet>(config, std::move(pools), std::move(provider), clock);
}

Fleet::Fleet(const CapacityConfig& config, std::vector<FleetPool> pools,
             cloud::ProviderPtr provider, const util::Clock& clock)
    : config_(config),
      pools_(std::move(pools)),
      provider_(std::move(provider)),
      clock_(clock),
      last_poll_(clock.now()) {}

util::Duration Fleet::notice_for(const std::string& provider) const {
  if (config_.notice) return *config_.notice;
  const cloud::SimCloudOptions defaults;
  auto it = defaults.notice_lead.find(provider);
  return it == defaults.notice_lead.end() ? util::Duration{0} : it->second;
}

FleetNode* Fleet::find_mut(const std::string& node) {
  for (auto& [id, n] : nodes_)
    if (n.name == node) return &n;
  return nullptr;
}

const FleetNode* Fleet::find(const std::string& node) const {
  for (const auto& [id, n] : nodes_)
    if (n.name == node) return &n;
  return nullptr;
}

std::vector<FleetEvent> Fleet::poll() {
  const util::Time now = clock_.now();
  std::vector<FleetEvent> out = std::move(injected_);
  injected_.clear();
  // Forced reclaims whose notice has run out: give the node back as the provider would take it.
  for (auto it = forced_.begin(); it != forced_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    if (auto st = provider_->release_node(it->first); !st.is_ok())
      TY_LOG_WARN("fleet: reclaiming request {}: {}", it->first, st.message());
    it = forced_.erase(it);
  }
  // From just before the last poll: a release or request made after it in the same microsecond
  // emits events at that time. Every event is applied once (the handlers below check the
  // node's state), so seeing one again is harmless.
  for (const cloud::ProviderEvent& e : provider_->poll(last_poll_ - util::Duration(1))) {
    auto it = nodes_.find(e.request);
    if (it == nodes_.end()) continue;  // gone already (a forced reclaim before the real one)
    FleetNode& n = it->second;
    FleetPool& pool = pools_[n.pool];
    FleetEvent fe{.node = n.name, .pool = n.pool, .time = e.time};
    switch (e.kind) {
      case cloud::ProviderEventKind::NodeReady:
        if (n.state != FleetNodeState::Provisioning) continue;
        n.state = FleetNodeState::Ready;
        n.ready_at = e.time;
        fe.kind = FleetEvent::Kind::Ready;
        break;
      case cloud::ProviderEventKind::InterruptionNotice:
        if (n.state == FleetNodeState::Noticed || n.state == FleetNodeState::Releasing) continue;
        n.state = FleetNodeState::Noticed;
        n.deadline = e.deadline;
        drive::block_zone(pool, n.zone, now + config_.zone_backoff);
        ++pool.interruptions;
        fe.kind = FleetEvent::Kind::Notice;
        fe.deadline = e.deadline;
        break;
      case cloud::ProviderEventKind::NodeGone:
        fe.kind = FleetEvent::Kind::Gone;
        fe.reclaimed = n.state != FleetNodeState::Releasing || n.forced;
        fe.reason = e.reason;
        if (fe.reclaimed && n.state != FleetNodeState::Noticed) {
          // Taken without a notice (none reached us): count and block as for a notice.
          drive::block_zone(pool, n.zone, now + config_.zone_backoff);
          ++pool.interruptions;
        }
        nodes_.erase(it);
        break;
      case cloud::ProviderEventKind::RequestFailed:
        fe.kind = FleetEvent::Kind::Failed;
        fe.reason = e.reason;
        drive::refuse_zone(pool, n.zone, now, config_.spot_unavailable_backoff);
        nodes_.erase(it);
        break;
    }
    out.push_back(std::move(fe));
  }
  last_poll_ = now;
  return out;
}

void Fleet::add_pools(sched::Snapshot& snap) const {
  for (const FleetPool& fp : pools_) {
    const int idx = sched::add_pool(snap, fp.pool);
    sched::SnapshotPool& sp = snap.pools[idx];
    sp.unavailable_until = fp.unavailable_until;
    for (size_t z = 0; z < sp.zones.size() && z < fp.zones.size(); ++z)
      sp.zones[z].blocked_until = fp.zones[z].blocked_until;
  }
  for (const auto& [id, n] : nodes_) {
    sched::SnapshotPool& sp = snap.pools[n.pool];
    if (n.state == FleetNodeState::Provisioning) {
      ++sp.provisioning;
    } else {
      ++sp.ready;
    }
  }
}

std::vector<std::string> Fleet::scale_up(const sched::ScaleUpAction& action) {
  std::vector<std::string> out;
  if (action.pool < 0 || action.pool >= static_cast<int>(pools_.size())) return out;
  FleetPool& pool = pools_[action.pool];
  const int zone =
      action.zone >= 0 && action.zone < static_cast<int>(pool.zones.size()) ? action.zone : 0;
  for (int i = 0; i < action.nodes; ++i) {
    cloud::NodeRequest req{.offering = pool.zones[zone].offering,
                           .purchase = pool.pool.kind == model::PoolKind::Spot
                                           ? cloud::PurchaseOption::Spot
                                           : cloud::PurchaseOption::OnDemand,
                           .pool = pool.pool.name};
    auto id = provider_->request_node(req);
    if (!id.is_ok()) {
      TY_LOG_WARN("fleet: pool {}: cannot request a node: {}", pool.pool.name,
                  id.status().message());
      break;
    }
    FleetNode n{.request = *id,
                .name = fmt::format("{}-{}", pool.pool.name, ++next_number_[pool.pool.name]),
                .pool = action.pool,
                .zone = zone,
                .price_per_hour = pool.zones[zone].price_per_hour,
                .requested = clock_.now()};
    out.push_back(n.name);
    nodes_.emplace(*id, std::move(n));
  }
  return out;
}

util::Status Fleet::release(const std::string& node) {
  FleetNode* n = find_mut(node);
  if (n == nullptr) return util::not_found(fmt::format("node {} is not in the fleet", node));
  if (n->state == FleetNodeState::Releasing) return util::Status::ok();
  n->state = FleetNodeState::Releasing;
  return provider_->release_node(n->request);
}

util::Status Fleet::force_interruption(const std::string& node) {
  FleetNode* n = find_mut(node);
  if (n == nullptr) return util::not_found(fmt::format("node {} is not in the fleet", node));
  if (n->state != FleetNodeState::Ready)
    return util::failed_precondition(
        fmt::format("node {} is {}; only a ready node can be interrupted", node,
                    fleet_node_state_name(n->state)));
  const util::Time now = clock_.now();
  FleetPool& pool = pools_[n->pool];
  n->state = FleetNodeState::Noticed;
  n->forced = true;
  n->deadline = now + notice_for(pool.pool.provider);
  drive::block_zone(pool, n->zone, now + config_.zone_backoff);
  ++pool.interruptions;
  forced_[n->request] = n->deadline;
  injected_.push_back({.kind = FleetEvent::Kind::Notice,
                       .node = n->name,
                       .pool = n->pool,
                       .time = now,
                       .deadline = n->deadline,
                       .reason = "interruption forced through the API"});
  return util::Status::ok();
}

LocalNode Fleet::local_node(const FleetNode& n, util::NodeId id) const {
  const FleetPool& fp = pools_[n.pool];
  const model::Accelerator* acc = model::find_accelerator(fp.pool.gpu_model);
  LocalNode out;
  out.simulated = true;
  out.cloud = true;
  out.price_per_hour = n.price_per_hour;
  out.zone = n.zone >= 0 ? fp.zones[n.zone].name : "";
  out.node.id = id;
  out.node.name = n.name;
  out.node.pool = fp.pool.name;
  out.node.gpu_model = fp.pool.gpu_model;
  out.node.gpu_count = fp.pool.gpus_per_node;
  out.node.cpu = fp.pool.cpu;
  out.node.memory = fp.pool.memory;
  out.node.mig_enabled = fp.pool.mig_enabled;
  out.node.labels = fp.pool.labels;
  out.node.labels[model::kLabelPool] = fp.pool.name;
  if (!out.zone.empty()) out.node.labels["topology.kubernetes.io/zone"] = out.zone;
  for (int i = 0; i < fp.pool.gpus_per_node; ++i) {
    const std::string model_name = acc != nullptr ? std::string(acc->name) : fp.pool.gpu_model;
    out.gpus.push_back({.index = i,
                        .uuid = fmt::format("GPU-sim-{}-{}", n.name, i),
                        .name = "Simulated " + model_name,
                        .model = model_name,
                        .memory = acc != nullptr ? acc->memory : model::Bytes(0),
                        .simulated = true});
  }
  return out;
}

}  // namespace trainyard::server
