// Who holds the GPUs a pending job waits for: the running jobs (and the jobs this plan starts)
// on the nodes the job could use, soonest expected end first, for the pending reason
// "waiting for 4 x H100-80GB: held by job 12 (team a, 4 GPUs, limit ends in 20m), ...".
// Pure: reads the snapshot and the plan. Thread-compatible; answers are memoized per request
// shape (jobs asking alike wait for the same holders), so a long queue costs one answer per shape.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "sched/plan.h"
#include "sched/snapshot.h"

namespace trainyard::sched {

// When a running job is expected to end, from what the scheduler knows: `now` while it is being
// preempted, else the earlier of start + runtime limit and now + known remaining time (the
// simulator's); Time::max() when neither bounds it.
Time expected_end(const SnapshotJob& job, Time now);

// "20m", "1h05m", "2d03h", "45s": a span for a reason a person reads.
std::string format_span(Duration d);

// What the job asks for, for a reason: "4 x H100-80GB", "2 x 4 GPUs", "0.50 GPU", "MIG 1g.10gb".
std::string request_text(const Snapshot& snap, const SnapshotJob& job);

// Whether a job waits for GPUs other jobs hold now (so its reason should name them).
bool waits_for_gpus(const WaitReason& r);

struct GpuHolder {
  JobId job;
  int team = -1;            // index into Snapshot::teams
  Time ends = Time::max();  // expected_end(); Time::max() = nothing bounds it
  bool stopping = false;    // being preempted
  int gpus = 0;             // GPUs it holds on the nodes the waiting job could use
};

class GpuHolders {
 public:
  GpuHolders(const Snapshot& snap, const Plan& plan);

  // The holders of GPUs on nodes `job` could use, by expected end, then id. Valid as long as
  // this object.
  const std::vector<GpuHolder>& of(const SnapshotJob& job);
  // "waiting for 4 x H100-80GB: held by job 12 (team a, 4 GPUs, limit ends in 20m), job 15
  // (team b, 2 GPUs, no runtime limit)"; names at most `max_named` and counts the rest. "" when
  // `id` is not a pending job of the snapshot or nobody holds such GPUs.
  std::string describe(JobId id, size_t max_named = 4);

 private:
  struct Entry {
    GpuHolder holder;
    std::vector<int> nodes;  // per assignment with a GPU: its node index
  };
  const Snapshot& snap_;
  std::vector<Entry> entries_;
  std::vector<std::vector<int>> by_node_;  // per node index: indexes into entries_
  std::unordered_map<int64_t, int> job_index_;
  std::unordered_map<std::string, std::vector<GpuHolder>> of_memo_;  // by shape_key()
  std::unordered_map<std::string, std::string> text_memo_;           // by shape_key(), max_named
};

}  // namespace trainyard::sched
