// The scheduler's entry point, plan(), and its output: what to start where, what to preempt,
// and for every pending job why it still waits (which stage held it back). Drivers apply
// preemptions first, then starts; a job that waits for victims to leave is started by a later
// plan().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sched/policy_config.h"
#include "sched/snapshot.h"

namespace trainyard::sched {

struct StartAction {
  JobId job;
  std::vector<Assignment> placement;
  // Elastic jobs: the number of workers this attempt runs with (placement's workers are
  // 0..workers-1) and the global batch it should use (0: its own); 0 = as the job asks.
  int workers = 0;
  int batch = 0;
};

enum class PreemptCause {
  HigherPriority,
  ShorterRemaining,
  LowerServiceQueue,
  QuotaReclaim,
  Resize,  // goodput: restarted at another size or GPU type (checkpoint, then resume)
};

// Buy `nodes` nodes for pool `pool` (index into Snapshot::pools), in zone `zone` (index into
// the pool's zones; -1 = the provider chooses). `for_job` is the first pending job they serve.
struct ScaleUpAction {
  int pool = -1;
  int zone = -1;
  int nodes = 0;
  JobId for_job;
};

// Give back node `node_idx` (index into Snapshot::nodes): idle past its pool's timeout.
struct ReleaseAction {
  int node_idx = -1;
};

struct PreemptAction {
  JobId job;
  JobId for_job;  // the pending job that needs the capacity
  PreemptCause cause;
};

enum class Stage { Dependency, Admission, Placement, Preemption, Backfill, Order, Autoscale };

enum class WaitCode {
  DependencyUnfinished,  // arg: the dependency's id
  QuotaExceeded,         // arg: milli-GPUs over the team's quota plus what it may borrow
  NoCapacityNow,         // enough GPUs exist but are not free
  NeverFits,             // no node of the cluster could ever hold a worker
  HeadOfLine,            // strict FIFO: a job ahead (arg) does not fit
  BackfillWouldDelay,    // would delay the job holding the reservation (arg)
  AwaitingVictims,       // preemptions under way free the capacity; starts next cycle
  BudgetExhausted,       // the team spent its budget for this period
  AwaitingNodes,         // nodes requested for it (arg: pool index) are being provisioned
  Unexamined,            // not reached this cycle (queue order put others first)
  PreemptionDeferred,    // this plan's victim searches (arg: the limit) were spent on jobs
                         // ranked higher; it is searched in a later plan
};

struct WaitReason {
  JobId job;
  Stage stage;
  WaitCode code;
  int64_t arg = 0;
  uint8_t filter = 0;  // for placement: which filter removed the last candidates (see placement.h)
};

// The backfill reservation a plan made (backfill policy only): the first job that did not fit
// and the shadow time, when the running jobs' runtime limits free its GPUs. job is kNoJob when
// the plan made none.
struct Reservation {
  JobId job = util::kNoJob;
  Time at = Time::max();
};

struct Plan {
  // Some job waits with PreemptionDeferred: a driver should plan again soon even if nothing
  // else changes.
  bool victim_searches_capped = false;
  std::vector<StartAction> starts;
  std::vector<PreemptAction> preemptions;
  std::vector<WaitReason> waiting;  // one per pending job that did not start
  std::vector<ScaleUpAction> scale_ups;
  std::vector<ReleaseAction> releases;
  Reservation reservation;
};

std::string_view stage_name(Stage s);
std::string_view wait_code_name(WaitCode c);
std::string_view preempt_cause_name(PreemptCause c);
// A sentence a user can act on, e.g. "placement: no node has 4 free GPUs of H100-80GB now".
std::string describe(const WaitReason& reason, const Snapshot& snap);

// A pure, deterministic function: reads only the snapshot and the config (time comes from
// snap.now), does no I/O, and returns the same plan for the same inputs. `seed` is the only
// allowed source of randomness; the built-in policies draw none, and break every tie by job id,
// node bucket order or GPU index. cfg.name must name a registered policy (find_policy); drivers
// validate it at start-up. Defined in scheduler.cc.
Plan plan(const Snapshot& snap, const PolicyConfig& cfg, uint64_t seed = 0);

}  // namespace trainyard::sched
