// The fleet both drivers buy nodes through: a cloud::Provider turned into the pools, zones and
// nodes that sched::plan() sees and scales. Resolves the pools against the price catalog,
// requests the nodes of the plan's scale-ups, applies the provider's events to each node
// (provisioning -> ready -> noticed -> gone, or a refused request), backs off from zones that
// reclaimed or refused (zone_backoff.h), fills the pools' snapshot fields and reports what the
// driver must act on. The simulator keeps its snapshot nodes and ledger, the server its
// LocalNodes. Not thread-safe: one owner (the sim loop, the control plane under its mutex).
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cloud/provider.h"
#include "cloud/throughput.h"
#include "model/node.h"
#include "sched/plan.h"
#include "sched/snapshot.h"
#include "util/clock.h"

namespace trainyard::drive {

// A cloud pool with the offerings it buys from: one per zone, in preference order.
struct FleetPool {
  model::Pool pool;  // gpu_model, gpus_per_node, cpu, memory, zones and price from the catalog
  struct Zone {
    std::string name;     // empty when the provider has no zones (the region is the place)
    size_t offering = 0;  // index into the provider's offerings()
    double price_per_hour = 0;
    util::Time blocked_until{};  // after a reclaim or a refused request here
  };
  std::vector<Zone> zones;
  util::Time unavailable_until{};  // every zone refused a request
  int interruptions = 0;           // reclaims seen
  int provisioning = 0;            // nodes requested, not ready yet
  int ready = 0;                   // nodes up (noticed and releasing ones too) until gone
};

enum class FleetNodeState { Provisioning, Ready, Noticed, Releasing };
std::string_view fleet_node_state_name(FleetNodeState s);

struct FleetNode {
  cloud::RequestId request = 0;
  std::string name;  // "<pool>-<n>", n from 1 per pool
  int pool = -1;     // index into pools()
  int zone = -1;     // index into the pool's zones
  FleetNodeState state = FleetNodeState::Provisioning;
  double price_per_hour = 0;
  util::Time requested{};
  util::Time ready_at{};
  util::Time deadline{};  // Noticed: when the provider takes it
  bool forced = false;    // interruption injected by force_interruption()
  // Its place among the fleet's nodes once ready: a node that comes up takes the place of the
  // node gone last. Both drivers list their nodes in this order (placement breaks ties by it).
  int slot = -1;
};

// What changed in the fleet, for the driver to act upon, in the provider's order.
struct FleetEvent {
  enum class Kind { Ready, Notice, Gone, Failed };
  Kind kind = Kind::Ready;
  FleetNode node;  // after the event (Gone, Failed: as it was when it left the fleet)
  util::Time time{};
  util::Time deadline{};   // Notice
  bool reclaimed = false;  // Gone: taken by the provider, not released by us
  std::string reason;
};

struct FleetOptions {
  util::Duration zone_backoff = std::chrono::minutes(10);    // after a reclaim in a zone
  util::Duration refusal_backoff = std::chrono::minutes(5);  // after "no spot capacity" there
};

class Fleet {
 public:
  // Each pool's zones and price from the offerings that match its provider, instance type,
  // region and zones (purchase by pool kind). Region empty: the cheapest region that sells it.
  // With `throughputs`, its GPU's speed too, so that pools rank by price per unit of work.
  static util::Result<std::vector<FleetPool>> resolve_pools(
      const std::vector<model::Pool>& pools, std::span<const cloud::Offering> offs,
      const cloud::ThroughputTable* throughputs);
  Fleet(std::vector<FleetPool> pools, cloud::ProviderPtr provider, const util::Clock& clock,
        FleetOptions options);

  // Provider events since the last poll (and forced notices), applied to the nodes.
  std::vector<FleetEvent> poll();
  // Appends every pool to snap.pools (index = index in pools()) with its counts and back-offs.
  void add_pools(sched::Snapshot& snap) const;
  // Refreshes those fields of the pools add_pools() put first in a snapshot that lives on.
  void update_pools(sched::Snapshot& snap) const;
  // Requests the nodes of a scale-up; returns their names. An error means the provider
  // refused the request itself (bad offering or option): the rest is not requested.
  util::Result<std::vector<std::string>> scale_up(const sched::ScaleUpAction& action);
  // Gives a node back (NodeGone follows on the next poll).
  util::Status release(const std::string& node);
  // Test and demo aid: the node gets an interruption notice now and is reclaimed `notice`
  // later, as if the provider had chosen it.
  util::Status force_interruption(const std::string& node, util::Duration notice);
  // The node as the scheduler sees it: the pool's shape and labels, and its zone's label.
  model::Node node_spec(const FleetNode& n) const;

  const FleetNode* find(const std::string& node) const;
  const std::vector<FleetPool>& pools() const { return pools_; }
  const std::map<cloud::RequestId, FleetNode>& nodes() const { return nodes_; }
  // The next time the provider will report something, if it can tell.
  std::optional<util::Time> next_event() const { return provider_->next_event_time(); }
  // The earliest time after `now` when a pool out of capacity may buy again, if any.
  std::optional<util::Time> next_reopen(util::Time now) const;
  int nodes_up() const { return up_; }
  int gpus_up() const { return gpus_up_; }
  double usd_per_hour() const { return usd_per_hour_; }  // every node up now
  int64_t refusals() const { return refusals_; }         // requests refused so far

 private:
  FleetNode* find_mut(const std::string& node);
  void reclaimed(FleetPool& pool, int zone, util::Time t);
  void gone(FleetNode& n);
  // poll()'s steps.
  void release_forced_reclaims(util::Time now);
  // One provider event applied to its node; nullopt when the node's state shows that it was
  // applied already (the event was read again) or does not apply.
  std::optional<FleetEvent> apply_event(const cloud::ProviderEvent& e, FleetNode& n);
  void node_ready(FleetNode& n, util::Time t);

  std::vector<FleetPool> pools_;
  cloud::ProviderPtr provider_;
  const util::Clock& clock_;
  FleetOptions options_;
  util::Time last_poll_{};
  std::map<cloud::RequestId, FleetNode> nodes_;  // not gone yet
  std::vector<int> next_number_;                 // per pool, for node names
  std::vector<int> free_slots_;                  // of nodes gone, the last gone at the back
  int slots_ = 0;
  std::map<cloud::RequestId, util::Time> forced_;  // forced reclaims: when the node is taken
  std::vector<FleetEvent> injected_;               // forced notices, reported by the next poll
  int up_ = 0;
  int gpus_up_ = 0;
  double usd_per_hour_ = 0;
  int64_t refusals_ = 0;
};

}  // namespace trainyard::drive
