#include "sched/internal/place_per_worker.h"

#include <array>
#include <bit>
#include <cstdint>

#include "sched/internal/node_filter.h"

namespace trainyard::sched::internal {
namespace {

using model::kMaxGpusPerNode;
using model::kMilliPerGpu;

// Bits set per byte: std::popcount compiles to a library call on the baseline x86-64 target,
// and the MIG scoring asks it for every GPU of every MIG node scanned.
constexpr auto kSlicesUsed = [] {
  std::array<uint8_t, 256> bits{};
  for (int v = 0; v < 256; ++v)
    bits[v] = static_cast<uint8_t>(std::popcount(static_cast<unsigned>(v)));
  return bits;
}();

// Capacity this job's earlier workers already took in this placement attempt.
struct Overlay {
  struct Taken {
    int32_t node;
    int16_t gpu;
    int16_t milli;
    uint8_t mig_bits;
  };
  std::vector<Taken> gpus;
  std::vector<std::pair<int32_t, int>> workers_on_node;

  int16_t milli_taken(int32_t node, int16_t gpu) const {
    int16_t t = 0;
    for (const auto& x : gpus) {
      if (x.node == node && x.gpu == gpu) t = static_cast<int16_t>(t + x.milli);
    }
    return t;
  }
  uint8_t mig_taken(int32_t node, int16_t gpu) const {
    uint8_t t = 0;
    for (const auto& x : gpus) {
      if (x.node == node && x.gpu == gpu) t = static_cast<uint8_t>(t | x.mig_bits);
    }
    return t;
  }
  int workers(int32_t node) const {
    for (const auto& [n, k] : workers_on_node) {
      if (n == node) return k;
    }
    return 0;
  }
  void add_worker(int32_t node) {
    for (auto& [n, k] : workers_on_node) {
      if (n == node) {
        ++k;
        return;
      }
    }
    workers_on_node.emplace_back(node, 1);
  }
};

struct Choice {
  int32_t node = -1;
  int16_t gpu = -1;
  int8_t start = -1;
  int64_t score = 0;
};

// The search for one worker's spot: the best so far (first of the highest score in node, GPU
// order) and, while none is found, the filter that removed the last node.
struct WorkerSearch {
  Choice best;
  uint8_t filter = kFilterGpus;
};

// Scores the spots node `idx` offers the next worker of a fractional-GPU, MIG or CPU-only job.
void consider_node(const SnapshotJob& job, const ClusterState& state, const Overlay& overlay,
                   const PlaceOptions& opts, int idx, WorkerSearch& search) {
  const Snapshot& snap = state.snapshot();
  const bool pack = opts.strategy == PlacementStrategy::Pack;
  const model::WorkerRequest& w = job.worker;
  const SnapshotNode& n = snap.nodes[idx];
  Choice& best = search.best;
  if (!n.schedulable) return;
  if (uint8_t m = static_mismatch(job, snap, idx, opts)) {
    search.filter = m;
    return;
  }
  const NodeFree& f = state.node(idx);
  const int on_node = overlay.workers(idx) + 1;
  if (workers_by_resources(w, f.cpu, f.memory, on_node) < on_node) {
    search.filter = w.cpu > f.cpu ? kFilterCpu : kFilterMemory;
    return;
  }
  if (!w.mig_profile.empty()) {
    const model::MigProfile* p = mig_profile_on(snap, n, w.mig_profile, opts, nullptr);
    for (int16_t gpu = 0; gpu < n.gpu_count; ++gpu) {
      const uint8_t used = f.mig_used[gpu] | overlay.mig_taken(idx, gpu);
      for (int s = model::kMigMemorySlices - 1; s >= 0; --s) {
        if (!((p->start_mask >> s) & 1) || (used & p->slot_bits(s))) continue;
        const int64_t occupied = kSlicesUsed[used];
        const int64_t score = (pack ? occupied : 8 - occupied) * 16 + s;
        if (best.node < 0 || score > best.score) best = {idx, gpu, static_cast<int8_t>(s), score};
        break;
      }
    }
    search.filter = kFilterMig;
  } else if (w.gpu_milli.value() > 0) {
    for (int16_t gpu = 0; gpu < n.gpu_count; ++gpu) {
      const int64_t free = f.gpu_milli_free[gpu] - overlay.milli_taken(idx, gpu);
      const int64_t after = free - w.gpu_milli.value();
      if (after < 0) continue;
      const int64_t score = pack ? kMilliPerGpu - after : after;
      if (best.node < 0 || score > best.score) best = {idx, gpu, -1, score};
    }
  } else {
    // CPU-only: prefer nodes without GPUs, then the fullest (Pack) or emptiest CPU.
    const int64_t cpu_after = f.cpu.value() - w.cpu.value() * on_node;
    const int64_t score =
        (n.gpu_count == 0 ? (int64_t{1} << 40) : 0) + (pack ? -cpu_after : cpu_after);
    if (best.node < 0 || score > best.score) best = {idx, -1, -1, score};
  }
}

void prefetch_node(const ClusterState& state, int32_t idx) {
  const auto* node = reinterpret_cast<const char*>(&state.snapshot().nodes[idx]);
  for (size_t offset = 0; offset < sizeof(SnapshotNode); offset += 64) {
    __builtin_prefetch(node + offset);
  }
  __builtin_prefetch(&state.node(idx));
}

// Nodes in ascending order until the best spot reaches `enough` (no later spot can beat it).
bool scan(const SnapshotJob& job, const ClusterState& state, const PlaceOptions& opts,
          std::span<const int32_t> nodes, int64_t enough, WorkerSearch& search) {
  const Overlay none;
  constexpr size_t kAhead = 4;  // the listed nodes lie far apart in memory: fetch ahead
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i + kAhead < nodes.size()) prefetch_node(state, nodes[i + kAhead]);
    const int32_t idx = nodes[i];
    consider_node(job, state, none, opts, idx, search);
    if (search.best.node >= 0 && search.best.score >= enough) break;
  }
  return search.best.node >= 0;
}

// The first node, in index order, where a fractional worker gets a whole free GPU, when no
// spot scores above one (`whole_score`). Only nodes in the buckets above level 0 have a whole
// GPU free; they are scored only when they come before the best found so far.
bool first_whole_gpu_spot(const SnapshotJob& job, const ClusterState& state,
                          const PlaceOptions& opts, int64_t whole_score, WorkerSearch& search) {
  const Overlay none;
  int32_t first = INT32_MAX;
  for (int m = 0; m < static_cast<int>(state.snapshot().gpu_models.size()); ++m) {
    for (int level = 1; level <= kMaxGpusPerNode; ++level) {
      for (int32_t idx : state.bucket(m, level)) {
        if (idx >= first) continue;
        WorkerSearch on_node;
        consider_node(job, state, none, opts, idx, on_node);
        if (on_node.best.node < 0 || on_node.best.score != whole_score) continue;
        first = idx;
        search.best = on_node.best;
      }
    }
  }
  return first != INT32_MAX;
}

enum class SingleSpot { Found, None, Unknown };

// What a full scan would find for a job's only worker, found by scoring only the nodes that
// can hold it: MIG nodes for a MIG instance; for a fraction, nodes with a shared GPU and the
// first with a whole free one. None: no node has a spot. Unknown for CPU-only jobs (and where
// the shortcut does not apply): the full scan then decides.
SingleSpot find_single_worker_spot(const SnapshotJob& job, const ClusterState& state,
                                   const PlaceOptions& opts, WorkerSearch& search) {
  const model::WorkerRequest& w = job.worker;
  const bool pack = opts.strategy == PlacementStrategy::Pack;
  constexpr int64_t kNoBound = INT64_MAX;
  auto found = [](bool any) { return any ? SingleSpot::Found : SingleSpot::None; };
  if (!w.mig_profile.empty())
    return found(scan(job, state, opts, state.mig_nodes(), kNoBound, search));
  const int64_t milli = w.gpu_milli.value();
  if (milli <= 0) return SingleSpot::Unknown;
  const int64_t whole_score = pack ? milli : kMilliPerGpu - milli;
  if (pack) {
    // Any fitting shared GPU scores above every whole one, and they lie on shared_gpu_nodes().
    // An exact fit (nothing left over) scores the most, and a later node only replaces a
    // strictly higher score: the first exact fit ends the scan.
    scan(job, state, opts, state.shared_gpu_nodes(), kMilliPerGpu, search);
    if (search.best.node >= 0 && search.best.score > whole_score) return SingleSpot::Found;
    const bool shared_spot = search.best.node >= 0;
    search = {};
    if (first_whole_gpu_spot(job, state, opts, whole_score, search)) return SingleSpot::Found;
    return shared_spot ? SingleSpot::Unknown : SingleSpot::None;
  }
  // Spread: a whole free GPU leaves the most; without one, the shared GPU that leaves the most.
  if (first_whole_gpu_spot(job, state, opts, whole_score, search)) return SingleSpot::Found;
  return found(scan(job, state, opts, state.shared_gpu_nodes(), kNoBound, search));
}

// The filter a full scan names when no node has a spot: the last one a node sets, that is, the
// one the highest-index node that sets any names (nodes passing every filter without a spot
// set none), else kFilterGpus. Found from the end, usually at the last node.
uint8_t filter_of_full_scan(const SnapshotJob& job, const ClusterState& state,
                            const PlaceOptions& opts) {
  const Overlay none;
  for (int idx = state.node_count() - 1; idx >= 0; --idx) {
    WorkerSearch on_node{.filter = 0};
    consider_node(job, state, none, opts, idx, on_node);
    if (on_node.filter != 0) return on_node.filter;
  }
  return kFilterGpus;
}

}  // namespace

// The workers of a fractional-GPU, MIG or CPU-only job, one at a time, each on the best-scoring
// spot of all nodes that pass the filters (earlier workers' spots taken into account).
PlaceResult place_per_worker(const SnapshotJob& job, const ClusterState& state,
                             const PlaceOptions& opts) {
  const Snapshot& snap = state.snapshot();
  const model::WorkerRequest& w = job.worker;
  PlaceResult result;
  Overlay overlay;
  for (int worker = 0; worker < job.workers; ++worker) {
    WorkerSearch search;
    const SingleSpot single =
        job.workers > 1 ? SingleSpot::Unknown : find_single_worker_spot(job, state, opts, search);
    if (single == SingleSpot::None) {
      search = {.filter = filter_of_full_scan(job, state, opts)};
    } else if (single == SingleSpot::Unknown) {
      search = {};
      for (int idx = 0; idx < state.node_count(); ++idx) {
        consider_node(job, state, overlay, opts, idx, search);
      }
    }
    const Choice& best = search.best;
    if (best.node < 0) {
      result.placement.clear();
      result.filter = search.filter;
      return result;
    }
    Assignment a{.worker = worker, .node_idx = best.node, .gpu_idx = best.gpu};
    Overlay::Taken t{best.node, best.gpu, 0, 0};
    if (!w.mig_profile.empty()) {
      int mig_index = -1;
      const auto* p = mig_profile_on(snap, snap.nodes[best.node], w.mig_profile, opts, &mig_index);
      a.mig_profile = static_cast<int8_t>(mig_index);
      a.mig_start = best.start;
      t.mig_bits = p->slot_bits(best.start);
    } else if (w.gpu_milli.value() > 0) {
      a.milli = static_cast<int16_t>(w.gpu_milli.value());
      t.milli = a.milli;
    }
    if (best.gpu >= 0) overlay.gpus.push_back(t);
    overlay.add_worker(best.node);
    result.placement.push_back(a);
  }
  result.fit = Fit::Fits;
  return result;
}

bool has_worker_spot(const SnapshotJob& job, const ClusterState& state, int node_idx,
                     const PlaceOptions& opts) {
  WorkerSearch search;
  consider_node(job, state, Overlay{}, opts, node_idx, search);
  return search.best.node >= 0;
}

}  // namespace trainyard::sched::internal
