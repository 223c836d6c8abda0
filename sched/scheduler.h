// The scheduler's entry point. plan() is a pure, deterministic function: it reads only the
// snapshot and the config (time comes from snap.now), does no I/O, and returns the same plan
// for the same inputs. `seed` is the only allowed source of randomness; the built-in policies
// draw none, and break every tie by job id, node bucket order or GPU index.
#pragma once

#include <cstdint>

#include "sched/plan.h"
#include "sched/policy_config.h"
#include "sched/snapshot.h"

namespace trainyard::sched {

// cfg.name must name a registered policy (find_policy); drivers validate it at start-up.
Plan plan(const Snapshot& snap, const PolicyConfig& cfg, uint64_t seed = 0);

}  // namespace trainyard::sched
