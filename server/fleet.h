// The fleet: the server's side of the capacity loop. Owns the cloud::Provider (simcloud on the
// control plane's clock), the cloud pools resolved against the price catalog, and every node
// bought: requests -> provisioning -> ready -> (interruption notice) -> gone. The control plane
// polls it every reconcile cycle, turns ready nodes into LocalNodes, and hands it the plan's
// scale-ups and releases. Zones that reclaimed a node or refused a request recently are kept
// here (drive/zone_backoff.h, as in the simulator) and shown to the autoscaler through the
// snapshot's pools.
// Not thread-safe: the control plane calls it under its mutex.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cloud/provider.h"
#include "cloud/throughput.h"
#include "sched/plan.h"
#include "sched/snapshot.h"
#include "server/config.h"
#include "server/local_node.h"
#include "util/clock.h"

namespace trainyard::server {

// A cloud pool with the offerings it buys from: one per zone, in preference order (price).
struct FleetPool {
  model::Pool pool;  // gpu_model, gpus_per_node, cpu, memory and price filled from the catalog
  struct Zone {
    std::string name;     // empty when the provider has no zones (the region is the place)
    size_t offering = 0;  // index into the provider's offerings()
    double price_per_hour = 0;
    util::Time blocked_until{};  // after a reclaim or a refused request here
  };
  std::vector<Zone> zones;
  util::Time unavailable_until{};  // every zone refused a request
  int interruptions = 0;           // reclaims seen since the server started
};

enum class FleetNodeState { Provisioning, Ready, Noticed, Releasing };
std::string_view fleet_node_state_name(FleetNodeState s);

struct FleetNode {
  cloud::RequestId request = 0;
  std::string name;  // "<pool>-<n>"
  int pool = -1;     // index into pools()
  int zone = -1;     // index into the pool's zones
  FleetNodeState state = FleetNodeState::Provisioning;
  double price_per_hour = 0;
  util::Time requested{};
  util::Time ready_at{};
  util::Time deadline{};  // Noticed: when the provider takes it
  bool forced = false;    // interruption injected by force_interruption()
};

// What changed in the fleet, for the control plane to act upon.
struct FleetEvent {
  enum class Kind { Ready, Notice, Gone, Failed };
  Kind kind = Kind::Ready;
  std::string node;
  int pool = -1;
  util::Time time{};
  util::Time deadline{};   // Notice
  bool reclaimed = false;  // Gone: taken by the provider, not released by us
  std::string reason;
};

class Fleet {
 public:
  // Loads the catalog (and the Spot Advisor file in it), resolves the pools and makes the
  // provider (simcloud), all from `config`. Errors name the pool and the fix.
  static util::Result<std::unique_ptr<Fleet>> open(const CapacityConfig& config,
                                                   const util::Clock& clock);
  // Each pool's zones and price from the offerings that match its provider, instance type,
  // region and zones (purchase by pool kind). Region empty: the cheapest region that sells it.
  // With `throughputs`, its GPU's speed too, so that pools rank by price per unit of work.
  static util::Result<std::vector<FleetPool>> resolve_pools(
      const std::vector<model::Pool>& pools, std::span<const cloud::Offering> offs,
      const cloud::ThroughputTable* throughputs);
  // With a given provider and resolved pools (tests).
  Fleet(const CapacityConfig& config, std::vector<FleetPool> pools, cloud::ProviderPtr provider,
        const util::Clock& clock);

  // Provider events since the last poll, applied to the nodes; reclaims block their zone.
  std::vector<FleetEvent> poll();
  // Appends every pool to snap.pools (index = index in pools()), with ready/provisioning counts,
  // zones and their blocks. Call before nodes and teams are added.
  void add_pools(sched::Snapshot& snap) const;
  // Buys the nodes of a scale-up; returns the names of those requested. Failures are logged.
  std::vector<std::string> scale_up(const sched::ScaleUpAction& action);
  // Gives a node back (NodeGone follows on the next poll).
  util::Status release(const std::string& node);
  // Test and demo aid: the node gets an interruption notice now and is reclaimed after the
  // notice lead, as if the provider had chosen it.
  util::Status force_interruption(const std::string& node);
  // The node as the scheduler and executor see it: synthetic GPUs, labels for pool and zone.
  LocalNode local_node(const FleetNode& n, util::NodeId id) const;

  const FleetNode* find(const std::string& node) const;
  const std::vector<FleetPool>& pools() const { return pools_; }
  const std::map<cloud::RequestId, FleetNode>& nodes() const { return nodes_; }

 private:
  FleetNode* find_mut(const std::string& node);
  util::Duration notice_for(const std::string& provider) const;

  CapacityConfig config_;
  std::vector<FleetPool> pools_;
  cloud::ProviderPtr provider_;
  const util::Clock& clock_;
  util::Time last_poll_{};
  std::map<cloud::RequestId, FleetNode> nodes_;  // not gone yet
  std::map<std::string, int> next_number_;       // per pool, for node names
  // Forced reclaims: request -> when the node is taken (test and demo aid).
  std::map<cloud::RequestId, util::Time> forced_;
  std::vector<FleetEvent> injected_;  // forced notices, reported by the next poll
};

}  // namespace trainyard::server
