// The goodput policy: whole plan() for policies whose victims rule is Reallocate.
#pragma once

#include "sched/plan.h"
#include "sched/policy_config.h"
#include "sched/snapshot.h"

namespace trainyard::sched::internal {

void plan_goodput(const Snapshot& snap, const PolicyConfig& cfg, Plan& plan);

}  // namespace trainyard::sched::internal
