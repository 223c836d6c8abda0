// The simulator's side of the fleet (drive/fleet.h, shared with the server): simcloud on the
// simulation's virtual clock, nodes that join and leave the scheduler's snapshot (reusing the
// slots of gone ones), the cost ledger that prices every node-second, and the checkpoint
// interval policy. The Simulation owns the jobs; the Fleet owns the nodes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cloud/simcloud.h"
#include "cloud/spot_advisor.h"
#include "drive/cost_book.h"
#include "drive/fleet.h"
#include "sched/plan.h"
#include "sched/snapshot.h"
#include "sim/occupancy.h"
#include "util/clock.h"

namespace trainyard::sim {

// How jobs protect their work on nodes that may be reclaimed.
enum class CheckpointPolicy {
  None,     // restart from scratch after every preemption or interruption
  JobSpec,  // the job's own checkpoint interval (from the trace or spec)
  Young,    // sqrt(2 · checkpoint cost · MTBF), MTBF from the pool's interruption rate
};

// A capacity scenario: what the simulator may buy and how jobs checkpoint.
struct CloudScenario {
  std::string name;
  std::vector<model::Pool> pools;          // cloud pools (instanceType: ...), resolved at start
  std::vector<cloud::Offering> offerings;  // the catalog
  cloud::SpotAdvisor advisor;
  cloud::SimCloudOptions simcloud;
  CheckpointPolicy checkpoints = CheckpointPolicy::Young;
  util::Duration checkpoint_cost = util::seconds(30);  // δ: training stalls this long per save
  util::Duration zone_backoff = util::seconds(600);    // avoid a zone that reclaimed a node
  util::Duration spot_retry = util::seconds(300);      // after "no spot capacity"
  // Ranks pools by cost per unit of work when set (cloud/throughput.h); else by cost alone.
  std::shared_ptr<const cloud::ThroughputTable> throughputs;
  // Treat every job as preemptible (spot scenarios), whatever its spec says.
  bool all_preemptible = false;
};

// A node interruption the simulation must act on: stop the node's jobs by `deadline`.
struct FleetNotice {
  int node_idx = -1;
  util::Time deadline{};
};

class Fleet {
 public:
  // Resolves the pools against the catalog and adds them to `snap`. Errors name the pool.
  static util::Result<std::unique_ptr<Fleet>> create(const CloudScenario& scenario,
                                                     sched::Snapshot& snap, Occupancy& occupancy);

  // Carries out the plan's scale-ups and releases at `now`.
  util::Status apply(const sched::Plan& plan, util::Time now);
  // Provider events up to `now`, in order: nodes that came up join the snapshot; for a notice
  // `on_reclaim` is called at once, so the simulation stops the node's jobs (at once when the
  // deadline has come) before the node goes. Returns true when the snapshot changed.
  util::Result<bool> poll(util::Time now,
                          const std::function<void(const FleetNotice&)>& on_reclaim);
  // When the fleet next changes after `now`: the provider's next event or, when jobs wait,
  // sooner a pool that ran out of capacity reopening (nothing else wakes a run whose jobs wait
  // for such a pool). nullopt when nothing is due.
  std::optional<util::Time> next_wake(util::Time now, bool jobs_wait) const;
  // The jobs on a node changed: re-split its cost; an emptied node starts its idle clock.
  // Returns when the node may be released if it stays idle (for a replan), if ever.
  std::optional<util::Time> set_holders(int node_idx, std::vector<cloud::CostShare> shares,
                                        util::Time now);
  // Work a job lost on a node (for the cost report).
  void record_lost_work(int node_idx, const std::string& job, const std::string& team,
                        int64_t milli, util::Duration lost, util::Time now, bool interruption);
  // Releases every node at `now` and closes the books.
  void close(util::Time now);

  // Checkpoint interval for a job starting on `nodes` nodes, the first `node_idx`, under the
  // scenario's policy. A gang stops when any of its nodes is reclaimed: its rate is n times one.
  util::Duration checkpoint_interval(int node_idx, int nodes,
                                     util::Duration job_spec_interval) const;
  bool all_preemptible() const { return scenario_.all_preemptible; }
  util::Duration checkpoint_cost() const { return scenario_.checkpoint_cost; }

  const cloud::CostLedger& ledger() const { return cost_.ledger(); }
  int nodes_up() const { return cloud_->nodes_up(); }
  int gpus_up() const { return cloud_->gpus_up(); }
  // Running bill: USD per hour of every node up now.
  double usd_per_hour() const { return cloud_->usd_per_hour(); }
  int interruptions() const;
  // Node requests the provider refused (no capacity), so far.
  int64_t refusals() const { return cloud_->refusals(); }

 private:
  struct Slot {
    cloud::RequestId request = 0;  // 0: free slot
    util::Time up_since{};
    std::string name;
  };

  Fleet(const CloudScenario& scenario, sched::Snapshot& snap, Occupancy& occupancy);
  util::Status node_ready(const drive::FleetNode& fn, util::Time now);
  void node_gone(int idx, util::Time now);
  double pool_rate(int pool) const;

  const CloudScenario& scenario_;
  sched::Snapshot& snap_;
  Occupancy& occupancy_;
  util::VirtualClock clock_;
  std::unique_ptr<drive::Fleet> cloud_;
  drive::CostBook cost_;
  std::vector<double> prior_rate_;           // per pool: interruptions per node-hour before any
  std::vector<double> spot_node_hours_;      // per pool: for the observed interruption rate
  std::vector<Slot> slots_;                  // by snapshot node index = drive::FleetNode::slot
  std::map<cloud::RequestId, int> node_of_;  // request -> snapshot node index, while up
};

}  // namespace trainyard::sim
