// The scheduler's output: what to start where, what to preempt, and for every pending job
// why it still waits (which stage held it back). Drivers apply preemptions first, then
// starts; a job that waits for victims to leave is started by a later plan().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sched/snapshot.h"

namespace trainyard::sched {

struct StartAction {
  JobId job;
  std::vector<Assignment> placement;
};

enum class PreemptCause { HigherPriority, ShorterRemaining, LowerServiceQueue, QuotaReclaim };

struct PreemptAction {
  JobId job;
  JobId for_job;  // the pending job that needs the capacity
  PreemptCause cause;
};

enum class Stage { Dependency, Admission, Placement, Preemption, Backfill, Order };

enum class WaitCode {
  DependencyUnfinished,  // arg: the dependency's id
  QuotaExceeded,         // arg: milli-GPUs over the team's quota plus what it may borrow
  NoCapacityNow,         // enough GPUs exist but are not free
  NeverFits,             // no node of the cluster could ever hold a worker
  HeadOfLine,            // strict FIFO: a job ahead (arg) does not fit
  BackfillWouldDelay,    // would delay the job holding the reservation (arg)
  AwaitingVictims,       // preemptions under way free the capacity; starts next cycle
  Unexamined,            // not reached this cycle (queue order put others first)
};

struct WaitReason {
  JobId job;
  Stage stage;
  WaitCode code;
  int64_t arg = 0;
  uint8_t filter = 0;  // for placement: which filter removed the last candidates (see placement.h)
};

struct Plan {
  std::vector<StartAction> starts;
  std::vector<PreemptAction> preemptions;
  std::vector<WaitReason> waiting;  // one per pending job that did not start
};

std::string_view stage_name(Stage s);
std::string_view wait_code_name(WaitCode c);
std::string_view preempt_cause_name(PreemptCause c);
// A sentence a user can act on, e.g. "placement: no node has 4 free GPUs of H100-80GB now".
std::string describe(const WaitReason& reason, const Snapshot& snap);

}  // namespace trainyard::sched
