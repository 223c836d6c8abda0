// The policy registry: each named policy is a combination of the framework's stages.
// Stages run in this order: queue order -> dependency -> admission (quota, fair share,
// borrowing) -> placement (filter + score) -> preemption (victim selection) -> backfill.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "util/status.h"

namespace trainyard::sched {

enum class QueueOrderKind {
  Arrival,        // submit time
  RemainingTime,  // oracle remaining run time, shortest first
  Tiresias,       // discretized attained-service queues (2D-LAS / 2D-Gittins)
  Priority,       // priority class, then submit time
  DominantShare,  // team with the lowest weighted dominant share first (DRF), FIFO in team
  Goodput,        // Tiresias's attained-service queues, then submit time (2D-LAS), for the
                  // goodput policy's first pass (sched/goodput.cc)
};

enum class VictimRule {
  None,               // never preempts
  LowerPriority,      // victims have a strictly lower priority value
  LongerRemaining,    // victims have strictly more remaining time
  LowerServiceQueue,  // victims sit in a strictly lower-priority Tiresias queue
  QuotaReclaim,       // victims belong to cohort teams over their nominal quota
  Reallocate,         // goodput: jobs are resized or paused when the reallocation gains
};

struct PolicyTraits {
  std::string_view name;
  std::string_view summary;
  QueueOrderKind order;
  VictimRule victims;
  bool strict_fifo;  // stop at the first job that does not fit (head-of-line blocking)
  bool backfill;     // EASY backfill behind the first blocked job
};

std::span<const PolicyTraits> policies();
// The traits of a policy by name, or an error listing the known names.
util::Result<PolicyTraits> find_policy(std::string_view name);

}  // namespace trainyard::sched
