#include "bench/naive_plan.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "sched/cluster_state.h"
#include "sched/placement.h"
#include "sched/policy.h"
#include "sched/queue_order.h"

namespace trainyard::bench {
namespace {

using sched::Assignment;
using sched::ClusterState;
using sched::NodeFree;
using sched::SnapshotJob;
using sched::SnapshotNode;

struct Feasible {
  int32_t idx;
  int64_t workers;  // how many of the job's workers the node takes now
  int score;        // 0-100, as sched::placement_score
};

int whole_free(const NodeFree& f, int gpu_count) {
  int n = 0;
  for (int g = 0; g < gpu_count; ++g) n += f.gpu_milli_free[g] == model::kMilliPerGpu ? 1 : 0;
  return n;
}

// Filter: how many workers the node may take now (0 = filtered out).
int64_t workers_fitting(const SnapshotJob& job, const SnapshotNode& n, const NodeFree& f) {
  if (!n.schedulable || n.mig_enabled || n.gpu_model < 0) return 0;
  if (job.gpu_model_mask != 0 && !((job.gpu_model_mask >> n.gpu_model) & 1)) return 0;
  if (!job.node_selector.empty() && !model::selector_matches(job.node_selector, n.labels)) {
    return 0;
  }
  int64_t k = whole_free(f, n.gpu_count) / job.worker.gpus;
  if (job.worker.cpu.value() > 0) k = std::min(k, f.cpu.value() / job.worker.cpu.value());
  if (job.worker.memory.value() > 0) {
    k = std::min(k, f.memory.value() / job.worker.memory.value());
  }
  return k;
}

void take_gpus(const ClusterState& state, int32_t idx, int gpus, int first_worker, int64_t workers,
               std::vector<Assignment>* out) {
  const NodeFree& f = state.node(idx);
  int taken = 0;
  for (int g = 0; taken < gpus * workers; ++g) {
    if (f.gpu_milli_free[g] != model::kMilliPerGpu) continue;
    out->push_back({.worker = first_worker + taken / gpus,
                    .node_idx = idx,
                    .gpu_idx = static_cast<int16_t>(g),
                    .milli = static_cast<int16_t>(model::kMilliPerGpu)});
    ++taken;
  }
}

// Filter and score every node; the job's workers go on the best node that holds them all,
// else on the nodes taking the most workers (best score first).
std::vector<Assignment> place_whole(const SnapshotJob& job, const ClusterState& state,
                                    sched::PlacementStrategy strategy) {
  const auto& nodes = state.snapshot().nodes;
  std::vector<Feasible> feasible;
  int best = -1;
  for (int32_t idx = 0; idx < state.node_count(); ++idx) {
    const int64_t k = workers_fitting(job, nodes[idx], state.node(idx));
    if (k == 0) continue;
    const int64_t used = std::min<int64_t>(k, job.workers) * job.worker.gpus;
    const int free_after =
        whole_free(state.node(idx), nodes[idx].gpu_count) - static_cast<int>(used);
    feasible.push_back(
        {idx, k, sched::placement_score(strategy, nodes[idx].gpu_count, free_after)});
    const Feasible& f = feasible.back();
    if (k >= job.workers && (best < 0 || f.score > feasible[best].score)) {
      best = static_cast<int>(feasible.size()) - 1;
    }
  }
  std::vector<Assignment> out;
  if (best >= 0) {
    take_gpus(state, feasible[best].idx, job.worker.gpus, 0, job.workers, &out);
    return out;
  }
  std::sort(feasible.begin(), feasible.end(), [](const Feasible& a, const Feasible& b) {
    return std::tie(b.workers, b.score, a.idx) < std::tie(a.workers, a.score, b.idx);
  });
  int assigned = 0;
  for (const Feasible& f : feasible) {
    if (assigned == job.workers) break;
    const int64_t k = std::min<int64_t>(f.workers, job.workers - assigned);
    take_gpus(state, f.idx, job.worker.gpus, assigned, k, &out);
    assigned += static_cast<int>(k);
  }
  if (assigned < job.workers) out.clear();
  return out;
}

using ShapeKey =
    std::tuple<int, int, int64_t, int64_t, int64_t, uint64_t, std::string, model::Labels>;

ShapeKey shape_key(const SnapshotJob& j) {
  return {
      j.worker.gpus,           j.workers,        j.worker.gpu_milli.value(), j.worker.cpu.value(),
      j.worker.memory.value(), j.gpu_model_mask, j.worker.mig_profile,       j.node_selector};
}

}  // namespace

int naive_plan(const sched::Snapshot& snap, const NaiveOptions& opts) {
  ClusterState state(snap);
  std::set<ShapeKey> failed;
  int started = 0;
  const sched::PolicyConfig cfg{.name = "fifo"};
  for (int idx : sched::rank_jobs(snap, cfg, sched::QueueOrderKind::Arrival, false)) {
    const SnapshotJob& job = snap.jobs[idx];
    if (job.waiting_on != util::kNoJob) continue;
    if (opts.memo && failed.contains(shape_key(job))) continue;
    std::vector<Assignment> placement;
    if (job.worker.gpus > 0) {
      placement = place_whole(job, state, opts.strategy);
    } else {
      placement = sched::place(job, state, {.strategy = opts.strategy}).placement;
    }
    if (placement.empty()) {
      if (opts.memo) failed.insert(shape_key(job));
      continue;
    }
    state.apply(placement, job.worker);
    ++started;
  }
  return started;
}

}  // namespace trainyard::bench
