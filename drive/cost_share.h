// What a job's placement is billed of a node's cost, one rule for both drivers (the simulator's
// cloud runs and the server's ledger), so a job costs the same in each: a GPU or a fraction of
// one by its milli share, a MIG instance by its compute slices out of 7.
#pragma once

#include <cstdint>

#include "model/accelerator.h"
#include "sched/snapshot.h"

namespace trainyard::drive {

// Milli-GPUs `a` holds on a node of accelerator `acc`; 0 for a worker without a GPU, and for a
// MIG instance of a model the catalog does not know (acc null) or a profile it does not have.
int64_t held_milli(const model::Accelerator* acc, const sched::Assignment& a);
// The same, with the node's accelerator read from the snapshot.
int64_t held_milli(const sched::Snapshot& snap, const sched::Assignment& a);

}  // namespace trainyard::drive
