// Where each team stands, for GET /api/v1/queues: GPUs it uses per model, what it borrows from
// its cohort and lends to it, and its place in the fair policy's order. Computed with the
// scheduler's own quota ledger (sched/admission.h), so the numbers are the ones admission and
// the fair policy decide by.
#pragma once

#include <map>
#include <string>

#include "model/api_cluster_views.h"
#include "sched/snapshot.h"

namespace trainyard::server {

// Per team of `snap` (its nodes, teams with past_usage_share, and running jobs with their
// placements): usage, borrowed, lent and fair share as docs/api.md describes them.
// `fair`: the fair policy runs, so teams without any quota get equal weighted shares.
std::map<std::string, model::QueueStandingView> queue_standing(const sched::Snapshot& snap,
                                                               bool fair);

}  // namespace trainyard::server
