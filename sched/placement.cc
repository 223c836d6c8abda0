#include "sched/placement.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "sched/internal/node_filter.h"
#include "sched/internal/place_per_worker.h"
#include "util/status.h"

namespace trainyard::sched {
namespace {

using internal::mig_profile_on;
using internal::model_allowed;
using internal::selector_ok;
using internal::spot_ok;
using internal::static_mismatch;
using internal::workers_by_resources;
using model::kMaxGpusPerNode;
using model::kMilliPerGpu;

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

// A gang's candidates are every node of the buckets it could use, far apart in memory: the
// search fetches a few ahead what it reads of each (free capacity, spot, rack).
constexpr size_t kAhead = 8;
void prefetch_candidate(const ClusterState& state, int32_t idx) {
  const SnapshotNode& n = state.snapshot().nodes[idx];
  __builtin_prefetch(&n.rack);
  __builtin_prefetch(&n.spot);
  const auto* f = reinterpret_cast<const char*>(&state.node(idx));
  __builtin_prefetch(f);
  __builtin_prefetch(f + sizeof(NodeFree) - 1);
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
    if (!spot_ok(job, snap.nodes[idx])) {
      result.filter = kFilterSpot;
      return int64_t{0};
    }
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
      const std::span<const int32_t> bucket = state.bucket(m, level);
      for (size_t i = 0; i < bucket.size(); ++i) {
        if (i + kAhead < bucket.size()) prefetch_candidate(state, bucket[i + kAhead]);
        const int32_t idx = bucket[i];
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

const std::vector<int8_t>* MigProfileIndex::by_model(const std::string& profile) {
  if (profile.empty()) return nullptr;
  auto [it, inserted] = by_name_.try_emplace(profile);
  if (inserted) {
    it->second.assign(snap_->accelerators.size(), -1);
    for (size_t m = 0; m < snap_->accelerators.size(); ++m) {
      const model::Accelerator* accel = snap_->accelerators[m];
      if (accel == nullptr) continue;
      for (size_t i = 0; i < accel->mig_profiles.size(); ++i) {
        if (accel->mig_profiles[i].name != profile) continue;
        it->second[m] = static_cast<int8_t>(i);
        break;
      }
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
  return internal::place_per_worker(job, state, opts);
}

int64_t node_capacity(const SnapshotJob& job, const ClusterState& state, int node_idx,
                      const PlaceOptions& opts) {
  const model::WorkerRequest& w = job.worker;
  if (w.gpus > 0) {
    // The candidates and per-node worker counts of place_whole (step 2; step 1 is the case of
    // one node taking them all).
    if (!state.in_buckets(node_idx)) return 0;
    const NodeFree& f = state.node(node_idx);
    const int64_t by_gpus = f.whole_free / w.gpus;
    if (by_gpus == 0) return 0;  // the usual answer, without reading the node's labels
    const SnapshotNode& n = state.snapshot().nodes[node_idx];
    if (!model_allowed(job, n.gpu_model) || !spot_ok(job, n) ||
        !selector_ok(job, n, node_idx, opts))
      return 0;
    return workers_by_resources(w, f.cpu, f.memory, by_gpus);
  }
  if (job.workers != 1) return -1;
  return internal::has_worker_spot(job, state, node_idx, opts) ? 1 : 0;
}

NodeGroups::NodeGroups(const Snapshot& snap, const std::vector<bool>* selector_matches)
    : selector_matches_(selector_matches) {
  using Key = std::tuple<int, int, bool, bool, int64_t, int64_t, bool>;
  std::map<Key, size_t> index;
  for (int idx = 0; idx < static_cast<int>(snap.nodes.size()); ++idx) {
    const SnapshotNode& n = snap.nodes[idx];
    const bool matches = selector_matches != nullptr && (*selector_matches)[idx];
    const Key key{n.gpu_model,   n.gpu_count,      n.mig_enabled, n.spot,
                  n.cpu.value(), n.memory.value(), matches};
    auto [it, inserted] = index.try_emplace(key, groups_.size());
    if (inserted) {
      groups_.push_back({idx, idx, 1});
    } else {
      groups_[it->second].last = idx;
      ++groups_[it->second].count;
    }
  }
}

namespace {

// How many of the job's workers node `n` could hold were it empty.
int64_t empty_node_capacity(const SnapshotJob& job, const Snapshot& snap, const SnapshotNode& n,
                            const PlaceOptions& opts) {
  const model::WorkerRequest& w = job.worker;
  int64_t per_node = INT32_MAX;
  if (w.gpus > 0) {
    per_node = n.gpu_count / w.gpus;
  } else if (!w.mig_profile.empty()) {
    const model::MigProfile* p = mig_profile_on(snap, n, w.mig_profile, opts, nullptr);
    per_node = int64_t{n.gpu_count} * p->max_instances;
  } else if (w.gpu_milli.value() > 0) {
    per_node = int64_t{n.gpu_count} * (kMilliPerGpu / w.gpu_milli.value());
  }
  return workers_by_resources(w, n.cpu, n.memory, per_node);
}

}  // namespace

bool never_fits(const SnapshotJob& job, const Snapshot& snap, uint8_t* filter,
                const PlaceOptions& opts, const NodeGroups* groups) {
  int64_t capacity = 0;
  uint8_t last = kFilterGpus;  // the filter of the highest-index node filtered out
  const std::vector<bool>* selector = job.node_selector.empty() ? nullptr : opts.selector_matches;
  if (groups != nullptr && groups->selector_matches() == selector &&
      (selector != nullptr || job.node_selector.empty())) {
    // Every node of a group gets the same answer; the last filtered node is in the group
    // whose last node is highest.
    int32_t last_idx = -1;
    for (const NodeGroups::Group& g : groups->groups()) {
      if (uint8_t m = static_mismatch(job, snap, g.first, opts)) {
        if (g.last > last_idx) {
          last_idx = g.last;
          last = m;
        }
        continue;
      }
      capacity += g.count * empty_node_capacity(job, snap, snap.nodes[g.first], opts);
      if (capacity >= job.workers) return false;
    }
  } else {
    for (int idx = 0; idx < static_cast<int>(snap.nodes.size()); ++idx) {
      if (uint8_t m = static_mismatch(job, snap, idx, opts)) {
        last = m;
        continue;
      }
      capacity += empty_node_capacity(job, snap, snap.nodes[idx], opts);
      if (capacity >= job.workers) return false;
    }
  }
  if (filter) *filter = capacity > 0 ? uint8_t{kFilterGpus} : last;
  return true;
}

}  // namespace trainyard::sched
