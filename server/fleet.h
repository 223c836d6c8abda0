// The server's side of the fleet (drive/fleet.h, shared with the simulator): made from the
// `capacity:` config (catalog, Spot Advisor, throughput table, simcloud on the control plane's
// clock), with ready nodes turned into LocalNodes and interruptions that an admin can force.
// The control plane polls it every reconcile cycle and hands it the plan's scale-ups and
// releases. Not thread-safe: the control plane calls it under its mutex.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "drive/fleet.h"
#include "server/config.h"
#include "server/local_node.h"

namespace trainyard::server {

using drive::fleet_node_state_name;
using drive::FleetEvent;
using drive::FleetNode;
using drive::FleetNodeState;
using drive::FleetPool;

class Fleet : public drive::Fleet {
 public:
  // Loads the catalog (and the Spot Advisor file in it), resolves the pools and makes the
  // provider (simcloud), all from `config`. Errors name the pool and the fix.
  static util::Result<std::unique_ptr<Fleet>> open(const CapacityConfig& config,
                                                   const util::Clock& clock);
  // With a given provider and resolved pools (tests).
  Fleet(const CapacityConfig& config, std::vector<FleetPool> pools, cloud::ProviderPtr provider,
        const util::Clock& clock);

  // Buys the nodes of a scale-up; returns the names of those requested. Failures are logged.
  std::vector<std::string> scale_up(const sched::ScaleUpAction& action);
  // Test and demo aid: the node gets an interruption notice now and is reclaimed after its
  // provider's notice lead (capacity.noticeSeconds when set).
  util::Status force_interruption(const std::string& node);
  // The node as the scheduler and executor see it: synthetic GPUs, labels for pool and zone.
  LocalNode local_node(const FleetNode& n, util::NodeId id) const;

 private:
  std::optional<util::Duration> notice_;
};

}  // namespace trainyard::server
