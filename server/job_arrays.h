// Job arrays and holds on the server's side: the jobs an array submission creates (one per
// index, named NAME-<index>), the environment a task's workers get, and which pending jobs the
// scheduler is not offered this cycle: jobs held by a user, and array tasks beyond their array's
// %N limit of tasks running at once. Guarded by the caller (ControlPlane's mu_).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/api_views.h"
#include "model/job_manifest.h"
#include "server/active_job.h"
#include "store/store.h"

namespace trainyard::server {

// A job a submission creates: its manifest as stored and its record (id not yet assigned).
struct NewJob {
  model::JobManifest manifest;
  store::JobRecord rec;
};

// The jobs `m` stands for: `m` alone, or, when m.array is set, one per index with the name
// NAME-<index> and no array field, in index order. `m` must have passed parse_job_manifest().
std::vector<NewJob> expand_submission(const model::JobManifest& m, util::Time now);

// Inserts `jobs` in order, setting their ids, each with a Submitted event; every task of an
// array gets the first task's id as its array id. Runs inside the caller's transaction.
util::Status insert_new_jobs(store::Store& s, std::vector<NewJob>& jobs, const std::string& who,
                             util::Time now);

// The spec's env plus, for an array task, TRAINYARD_ARRAY_INDEX and TRAINYARD_ARRAY_JOB_ID
// (last, so that they win over a spec's own values).
std::vector<std::pair<std::string, std::string>> worker_env(const ActiveJob& job);

// Why a held job waits: "held by user; `trainyard release ID` lets the scheduler start it".
std::string held_reason(util::JobId id);

// "held by user; ..." or the array limit's explanation: why build_snapshot() leaves a pending
// job out, or nullopt when the scheduler may consider it. Built once per cycle over every job
// that has not ended; pending tasks of an array are let through in id order (lowest index
// first) while fewer than the limit run or were let through this cycle.
class PendingGates {
 public:
  explicit PendingGates(const std::map<util::JobId, ActiveJob>& active);
  std::optional<std::string> hold_back(const ActiveJob& job);

 private:
  std::map<util::JobId, int> busy_;  // per array id: tasks running or let through this cycle
};

// A job's controls in its API view: held, and for a task of an array the array's id, the task's
// index and the array's limit.
void add_job_controls(model::JobView& v, const store::JobRecord& rec);

}  // namespace trainyard::server
