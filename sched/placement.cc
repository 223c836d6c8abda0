#include "sched/placement.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#include "util/status.h"

namespace trainyard::sched {
namespace {

using model::kMaxGpusPerNode;
using model::kMilliPerGpu;

bool wants_gpu(const model::WorkerRequest& w) {
  return w.gpus > 0 || w.gpu_milli.value() > 0 || !w.mig_profile.empty();
}

bool model_allowed(const SnapshotJob& job, int gpu_model) {
  return job.gpu_model_mask == 0 || (gpu_model >= 0 && ((job.gpu_model_mask >> gpu_model) & 1));
}

const model::MigProfile* mig_profile_on(const Snapshot& snap, const SnapshotNode& n,
                                        const std::string& profile, int* index) {
  if (n.gpu_model < 0) return nullptr;
  const model::Accelerator* accel = snap.accelerators[n.gpu_model];
  if (accel == nullptr) return nullptr;
  for (size_t i = 0; i < accel->mig_profiles.size(); ++i) {
    if (accel->mig_profiles[i].name == profile) {
      if (index) *index = static_cast<int>(i);
      return &accel->mig_profiles[i];
    }
  }
  return nullptr;
}

bool selector_ok(const SnapshotJob& job, const SnapshotNode& n, int idx, const PlaceOptions& opts) {
  if (job.node_selector.empty()) return true;
  if (opts.selector_matches != nullptr) return (*opts.selector_matches)[idx];
  return model::selector_matches(job.node_selector, n.labels);
}

// Requirements node `idx` must meet whatever runs on it. 0 when it may host a worker.
uint8_t static_mismatch(const SnapshotJob& job, const Snapshot& snap, int idx,
                        const PlaceOptions& opts) {
  const SnapshotNode& n = snap.nodes[idx];
  const model::WorkerRequest& w = job.worker;
  if (wants_gpu(w)) {
    if (n.gpu_model < 0 || n.gpu_count == 0) return kFilterGpus;
    if (!model_allowed(job, n.gpu_model)) return kFilterGpuModel;
    if (!w.mig_profile.empty()) {
      if (!n.mig_enabled || mig_profile_on(snap, n, w.mig_profile, nullptr) == nullptr) {
        return kFilterMig;
      }
    } else if (n.mig_enabled) {
      return kFilterMig;  // MIG nodes offer only MIG instances
    }
    if (w.gpus > n.gpu_count) return kFilterGpus;
  }
  if (!selector_ok(job, n, idx, opts)) return kFilterSelector;
  if (w.cpu > n.cpu) return kFilterCpu;
  if (w.memory > n.memory) return kFilterMemory;
  return 0;
}

// At most `limit` workers, as many as `have` holds at `per` each. Divides only when `have`
// binds: most nodes take the whole limit or none.
int64_t capped(int64_t per, int64_t have, int64_t limit) {
  int64_t need = 0;
  if (per <= 0 || (!__builtin_mul_overflow(per, limit, &need) && need <= have)) return limit;
  return have < per ? 0 : std::min(limit, have / per);
}

int64_t workers_by_resources(const model::WorkerRequest& w, model::CpuMilli cpu,
                             model::Bytes memory, int64_t limit) {
  limit = capped(w.cpu.value(), cpu.value(), limit);
  limit = capped(w.memory.value(), memory.value(), limit);
  return std::max<int64_t>(limit, 0);
}

// Adds `count` whole free GPUs of node `idx` for each of `workers` workers.
void take_whole_gpus(const ClusterState& state, int idx, int gpus_per_worker, int first_worker,
                     int workers, std::vector<Assignment>* out) {
  const NodeFree& f = state.node(idx);
  const int count = state.snapshot().nodes[idx].gpu_count;
  int worker = first_worker;
  int taken_for_worker = 0;
  for (int g = 0; g < count && worker < first_worker + workers; ++g) {
    if (f.gpu_milli_free[g] != kMilliPerGpu) continue;
    out->push_back({.worker = worker,
                    .node_idx = idx,
                    .gpu_idx = static_cast<int16_t>(g),
                    .milli = static_cast<int16_t>(kMilliPerGpu)});
    if (++taken_for_worker == gpus_per_worker) {
      ++worker;
      taken_for_worker = 0;
    }
  }
  TY_CHECK(worker == first_worker + workers);
}

struct Candidate {
  int32_t idx;
  int64_t workers;  // how many workers this node can take now
  int free;         // whole free GPUs
};

PlaceResult place_whole(const SnapshotJob& job, const ClusterState& state,
                        const PlaceOptions& opts) {
  const Snapshot& snap = state.snapshot();
  const int g = job.worker.gpus;
  const int workers = job.workers;
  const int models = static_cast<int>(snap.gpu_models.size());
  PlaceResult result;
  result.filter = kFilterGpus;
  auto resources_ok = [&](int idx, int64_t want) {
    const NodeFree& f = state.node(idx);
    if (!selector_ok(job, snap.nodes[idx], idx, opts)) {
      result.filter = kFilterSelector;
      return int64_t{0};
    }
    const int64_t k = workers_by_resources(job.worker, f.cpu, f.memory, want);
    if (k < want) result.filter = job.worker.cpu > f.cpu ? kFilterCpu : kFilterMemory;
    return k;
  };

  // 1. The whole gang on one node: best-fit (Pack) or emptiest (Spread).
  const int need = g * workers;
  if (need <= kMaxGpusPerNode) {
    const bool pack = opts.strategy == PlacementStrategy::Pack;
    for (int step = 0; step <= kMaxGpusPerNode - need; ++step) {
      const int level = pack ? need + step : kMaxGpusPerNode - step;
      for (int m = 0; m < models; ++m) {
        if (!model_allowed(job, m)) continue;
        for (int32_t idx : state.bucket(m, level)) {
          if (resources_ok(idx, workers) < workers) continue;
          take_whole_gpus(state, idx, g, 0, workers, &result.placement);
          result.fit = Fit::Fits;
          return result;
        }
      }
    }
  }
  if (workers == 1) return result;

  // 2. Fewest nodes: candidates by free GPUs, largest first.
  std::vector<Candidate> cands;
  int64_t total = 0;
  for (int level = kMaxGpusPerNode; level >= g; --level) {
    for (int m = 0; m < models; ++m) {
      if (!model_allowed(job, m)) continue;
      for (int32_t idx : state.bucket(m, level)) {
        const int64_t k = resources_ok(idx, level / g);
        if (k > 0) {
          cands.push_back({idx, k, level});
          total += k;
        }
      }
    }
  }
  if (total < workers) return result;

  // Prefer one rack: the rack whose capacity is the smallest that still holds the gang.
  if (!snap.racks.empty()) {
    std::vector<int64_t> rack_cap(snap.racks.size(), 0);
    for (const auto& c : cands) {
      const int r = snap.nodes[c.idx].rack;
      if (r >= 0) rack_cap[r] += c.workers;
    }
    int best = -1;
    for (size_t r = 0; r < rack_cap.size(); ++r) {
      if (rack_cap[r] >= workers && (best < 0 || rack_cap[r] < rack_cap[best])) {
        best = static_cast<int>(r);
      }
    }
    if (best >= 0) {
      std::erase_if(cands, [&](const Candidate& c) { return snap.nodes[c.idx].rack != best; });
    }
  }

  // Greedy largest-first; the last node is swapped for the smallest one that holds the rest.
  std::vector<std::pair<int32_t, int>> chosen;
  int assigned = 0;
  size_t i = 0;
  for (; i < cands.size() && assigned < workers; ++i) {
    const int rest = workers - assigned;
    if (cands[i].workers >= rest) {
      size_t best = i;
      for (size_t j = cands.size(); j-- > i + 1;) {
        if (cands[j].workers >= rest) {
          best = j;
          break;
        }
      }
      chosen.emplace_back(cands[best].idx, rest);
      assigned = workers;
      break;
    }
    chosen.emplace_back(cands[i].idx, static_cast<int>(cands[i].workers));
    assigned += static_cast<int>(cands[i].workers);
  }
  TY_CHECK(assigned == workers);
  int next_worker = 0;
  for (const auto& [idx, k] : chosen) {
    take_whole_gpus(state, idx, g, next_worker, k, &result.placement);
    next_worker += k;
  }
  result.fit = Fit::Fits;
  return result;
}

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
    const model::MigProfile* p = mig_profile_on(snap, n, w.mig_profile, nullptr);
    for (int16_t gpu = 0; gpu < n.gpu_count; ++gpu) {
      const uint8_t used = f.mig_used[gpu] | overlay.mig_taken(idx, gpu);
      for (int s = model::kMigMemorySlices - 1; s >= 0; --s) {
        if (!((p->start_mask >> s) & 1) || (used & p->slot_bits(s))) continue;
        const int64_t occupied = std::popcount(used);
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

// Nodes in ascending order until the best spot reaches `enough` (no later spot can beat it).
bool scan(const SnapshotJob& job, const ClusterState& state, const PlaceOptions& opts,
          std::span<const int32_t> nodes, int64_t enough, WorkerSearch& search) {
  const Overlay none;
  for (int32_t idx : nodes) {
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

// What a full scan would find for a job's only worker, found by scoring only the nodes that
// can hold it: MIG nodes for a MIG instance; for a fraction, nodes with a shared GPU and the
// first with a whole free one. False when it cannot tell (CPU-only, or no spot at all: the full
// scan then decides and names the filter).
bool find_single_worker_spot(const SnapshotJob& job, const ClusterState& state,
                             const PlaceOptions& opts, WorkerSearch& search) {
  const model::WorkerRequest& w = job.worker;
  const bool pack = opts.strategy == PlacementStrategy::Pack;
  constexpr int64_t kNoBound = INT64_MAX;
  if (!w.mig_profile.empty()) return scan(job, state, opts, state.mig_nodes(), kNoBound, search);
  const int64_t milli = w.gpu_milli.value();
  if (milli <= 0) return false;
  const int64_t whole_score = pack ? milli : kMilliPerGpu - milli;
  if (pack) {
    // Any fitting shared GPU scores above every whole one, and they lie on shared_gpu_nodes().
    scan(job, state, opts, state.shared_gpu_nodes(), kNoBound, search);
    if (search.best.node >= 0 && search.best.score > whole_score) return true;
    search = {};
    return first_whole_gpu_spot(job, state, opts, whole_score, search);
  }
  // Spread: a whole free GPU leaves the most; without one, the shared GPU that leaves the most.
  if (first_whole_gpu_spot(job, state, opts, whole_score, search)) return true;
  return scan(job, state, opts, state.shared_gpu_nodes(), kNoBound, search);
}

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
    if (job.workers > 1 || !find_single_worker_spot(job, state, opts, search)) {
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
      const auto* p = mig_profile_on(snap, snap.nodes[best.node], w.mig_profile, &mig_index);
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

}  // namespace

const std::vector<bool>* NodeSelectorIndex::matching(const model::Labels& selector) {
  if (selector.empty()) return nullptr;
  auto [it, inserted] = matches_.try_emplace(selector);
  if (inserted) {
    it->second.resize(snap_->nodes.size());
    for (size_t i = 0; i < snap_->nodes.size(); ++i) {
      it->second[i] = model::selector_matches(selector, snap_->nodes[i].labels);
    }
  }
  return &it->second;
}

int placement_score(PlacementStrategy strategy, int total_gpus, int free_after) {
  if (total_gpus <= 0) return 0;
  const int used = total_gpus - free_after;
  const int pack = used * 100 / total_gpus;
  return strategy == PlacementStrategy::Pack ? pack : 100 - pack;
}

PlaceResult place(const SnapshotJob& job, const ClusterState& state, const PlaceOptions& opts) {
  if (job.worker.gpus > 0) return place_whole(job, state, opts);
  return place_per_worker(job, state, opts);
}

int64_t node_capacity(const SnapshotJob& job, const ClusterState& state, int node_idx,
                      const PlaceOptions& opts) {
  const model::WorkerRequest& w = job.worker;
  if (w.gpus > 0) {
    // The candidates and per-node worker counts of place_whole (step 2; step 1 is the case of
    // one node taking them all).
    const SnapshotNode& n = state.snapshot().nodes[node_idx];
    if (!state.in_buckets(node_idx) || !model_allowed(job, n.gpu_model)) return 0;
    if (!selector_ok(job, n, node_idx, opts)) return 0;
    const NodeFree& f = state.node(node_idx);
    return workers_by_resources(w, f.cpu, f.memory, f.whole_free / w.gpus);
  }
  if (job.workers != 1) return -1;
  WorkerSearch search;
  consider_node(job, state, Overlay{}, opts, node_idx, search);
  return search.best.node >= 0 ? 1 : 0;
}

bool never_fits(const SnapshotJob& job, const Snapshot& snap, uint8_t* filter) {
  const model::WorkerRequest& w = job.worker;
  int64_t capacity = 0;
  uint8_t last = kFilterGpus;
  for (int idx = 0; idx < static_cast<int>(snap.nodes.size()); ++idx) {
    const SnapshotNode& n = snap.nodes[idx];
    if (uint8_t m = static_mismatch(job, snap, idx, PlaceOptions{})) {
      last = m;
      continue;
    }
    int64_t per_node = INT32_MAX;
    if (w.gpus > 0) {
      per_node = n.gpu_count / w.gpus;
    } else if (!w.mig_profile.empty()) {
      const model::MigProfile* p = mig_profile_on(snap, n, w.mig_profile, nullptr);
      per_node = int64_t{n.gpu_count} * p->max_instances;
    } else if (w.gpu_milli.value() > 0) {
      per_node = int64_t{n.gpu_count} * (kMilliPerGpu / w.gpu_milli.value());
    }
    capacity += workers_by_resources(w, n.cpu, n.memory, per_node);
    if (capacity >= job.workers) return false;
  }
  if (filter) *filter = capacity > 0 ? uint8_t{kFilterGpus} : last;
  return true;
}

}  // namespace trainyard::sched
