// A seeded generator of valid scheduler snapshots for property tests: mixed node sizes and
// GPU models, some MIG and CPU-only nodes, racks, labels, draining nodes, teams with and
// without quotas and cohorts, and pending, running and preempting jobs (whole GPUs, gangs,
// fractions, MIG instances, CPU-only) whose existing placements never over-commit a node.
// Job ids are sparse and shuffled and submit times collide often, so id tie-breaks matter.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "model/accelerator.h"
#include "sched/snapshot.h"
#include "sched/snapshot_builder.h"

namespace trainyard::sched::testing {

class RandomSnapshot {
 public:
  explicit RandomSnapshot(uint64_t seed) : rng_(seed) {}

  Snapshot build() {
    snap_.now = util::from_seconds(100000);
    add_nodes();
    add_teams();
    add_jobs();
    return std::move(snap_);
  }

 private:
  struct Free {
    int64_t cpu = 0, memory = 0;
    std::array<int, model::kMaxGpusPerNode> milli{};
    std::array<uint8_t, model::kMaxGpusPerNode> mig{};
  };

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[uniform(0, static_cast<int>(v.size()) - 1)];
  }

  void add_nodes() {
    static const std::vector<std::string> kModels = {"H100-80GB", "A100-80GB", "A100-40GB", "L4",
                                                     "T4"};
    std::vector<std::string> models;
    for (int i = 0, n = uniform(1, 3); i < n; ++i) models.push_back(pick(kModels));
    const int nodes = uniform(2, 12);
    for (int i = 0; i < nodes; ++i) {
      model::Node n;
      n.id = util::NodeId(i + 1);
      n.name = "n" + std::to_string(i);
      n.gpu_count = chance(0.1) ? 0 : pick(std::vector<int>{1, 2, 4, 8, 8, 8, 16});
      n.gpu_model = n.gpu_count > 0 ? pick(models) : "";
      const model::Accelerator* accel = model::find_accelerator(n.gpu_model);
      n.mig_enabled = accel != nullptr && !accel->mig_profiles.empty() && chance(0.3);
      n.cpu = model::CpuMilli(int64_t{uniform(8, 128)} * 1000);
      n.memory = model::gib(uniform(32, 1024));
      n.rack = chance(0.7) ? "r" + std::to_string(uniform(0, 2)) : "";
      n.labels["zone"] = chance(0.5) ? "a" : "b";
      n.state = chance(0.9) ? model::NodeState::Ready : model::NodeState::Draining;
      add_node(snap_, n);
      Free f{.cpu = n.cpu.value(), .memory = n.memory.value()};
      for (int g = 0; g < n.gpu_count; ++g) f.milli[g] = 1000;
      free_.push_back(f);
    }
  }

  void add_teams() {
    // Modes: no quotas at all (the fair policy derives shares), a cohort of teams that all have
    // quotas, or a mix of teams with and without quotas and cohorts.
    const int teams = uniform(0, 4);
    const int mode = uniform(0, 2);
    for (int i = 0; i < teams; ++i) {
      model::Team t;
      t.name = "t" + std::to_string(i);
      t.weight = pick(std::vector<double>{0.5, 1, 1, 2, 3});
      if (mode == 1 || chance(0.5)) t.cohort = "c";
      if (mode == 1 || (mode == 2 && chance(0.5))) {
        const int64_t limit = chance(0.5) ? -1 : int64_t{uniform(0, 8)} * 1000;
        t.quotas[model::kAnyGpuModel] = {model::GpuMilli(int64_t{uniform(0, 16)} * 1000),
                                         model::GpuMilli(limit)};
        if (!snap_.gpu_models.empty() && chance(0.3)) {
          t.quotas[pick(snap_.gpu_models)] = {model::GpuMilli(int64_t{uniform(0, 8)} * 1000),
                                              model::GpuMilli(-1)};
        }
      }
      add_team(snap_, t);
    }
  }

  void add_jobs() {
    const int jobs = uniform(0, 40);
    std::vector<int64_t> ids;
    for (int i = 0; i < jobs; ++i) ids.push_back(int64_t{i} * 3 + uniform(1, 2));
    std::shuffle(ids.begin(), ids.end(), rng_);
    for (int64_t id : ids) add_job(id, ids);
  }

  void add_job(int64_t id, const std::vector<int64_t>& ids) {
    SnapshotJob j;
    j.id = util::JobId(id);
    j.team = snap_.teams.empty() || chance(0.2) ? -1 : uniform(0, int(snap_.teams.size()) - 1);
    j.priority = pick(std::vector<int>{0, 50, 100, 100});
    j.preemptible = chance(0.8);
    random_request(j);
    if (!snap_.gpu_models.empty() && chance(0.15)) {
      j.gpu_model_mask = uint64_t{1} << uniform(0, int(snap_.gpu_models.size()) - 1);
    }
    j.submitted = util::from_seconds(uniform(0, 20) * 1000);
    j.queued_since = j.submitted;
    j.runtime_limit = chance(0.6) ? util::seconds(uniform(1, 20) * 600) : util::Duration(0);
    if (chance(0.7)) j.remaining = util::seconds(uniform(1, 50) * 100);
    j.attained_gpu_time = util::seconds(pick(std::vector<int>{0, 0, 1000, 3200, 5000, 40000}));
    if (chance(0.5) && place_running(j)) {
      j.phase = chance(0.1) ? JobPhase::Preempting : JobPhase::Running;
      j.started = snap_.now - util::seconds(uniform(0, 20000));
    } else {
      if (chance(0.3)) {
        j.last_run = util::seconds(uniform(1, 20) * 100);
        j.queued_since = snap_.now - util::seconds(uniform(0, 40000));
      }
      if (chance(0.15)) j.node_selector["zone"] = chance(0.5) ? "a" : "c";
      if (chance(0.1)) j.waiting_on = util::JobId(pick(ids));
    }
    // A third of the whole-GPU jobs are elastic (1 to workers + 2 workers), and a running one
    // saved a checkpoint a minute ago, so goodput may resize it. Decided by id, not by the
    // random stream, so the rest of every snapshot is as it was.
    if (j.worker.gpus > 0 && j.worker.mig_profile.empty() && (id / 3) % 3 == 0) {
      j.min_workers = 1;
      j.max_workers = j.workers + 2;
      if (j.is_running()) j.last_checkpoint = snap_.now - util::seconds(60);
    }
    snap_.jobs.push_back(std::move(j));
  }

  void random_request(SnapshotJob& j) {
    model::WorkerRequest& w = j.worker;
    const int kind = uniform(0, 9);
    if (kind <= 6) {
      w.gpus = pick(std::vector<int>{1, 1, 1, 2, 2, 4, 4, 8, 8, 16});
      j.workers = chance(0.3) ? uniform(2, 3) : 1;
    } else if (kind == 7) {
      w.gpu_milli = model::GpuMilli(uniform(1, 9) * 100);
      j.workers = uniform(1, 2);
    } else if (kind == 8) {
      w.mig_profile = pick(std::vector<std::string>{"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb",
                                                    "7g.80gb", "1g.5gb", "3g.20gb"});
      j.workers = uniform(1, 2);
    } else {
      j.workers = uniform(1, 3);
    }
    w.cpu = model::CpuMilli(int64_t{uniform(0, 16)} * 1000);
    w.memory = model::gib(uniform(0, 64));
  }

  // Finds room for every worker on the generator's own free map (random nodes, random GPUs,
  // random valid MIG starts); false and nothing taken when some worker does not fit.
  bool place_running(SnapshotJob& j) {
    const std::vector<Free> saved = free_;
    for (int worker = 0; worker < j.workers; ++worker) {
      if (!place_worker(j, worker)) {
        free_ = saved;
        j.placement.clear();
        return false;
      }
    }
    return true;
  }

  bool place_worker(SnapshotJob& j, int worker) {
    const model::WorkerRequest& w = j.worker;
    std::vector<int> order(snap_.nodes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::shuffle(order.begin(), order.end(), rng_);
    for (int idx : order) {
      const SnapshotNode& n = snap_.nodes[idx];
      Free& f = free_[idx];
      if (f.cpu < w.cpu.value() || f.memory < w.memory.value()) continue;
      const bool gpu_job = w.gpus > 0 || w.gpu_milli.value() > 0 || !w.mig_profile.empty();
      if (gpu_job &&
          (n.gpu_model < 0 || (j.gpu_model_mask && !((j.gpu_model_mask >> n.gpu_model) & 1))))
        continue;
      std::vector<Assignment> got;
      if (w.gpus > 0) {
        if (n.mig_enabled) continue;
        std::vector<int16_t> gpus;
        for (int16_t g = 0; g < n.gpu_count; ++g)
          if (f.milli[g] == 1000) gpus.push_back(g);
        if (static_cast<int>(gpus.size()) < w.gpus) continue;
        std::shuffle(gpus.begin(), gpus.end(), rng_);
        gpus.resize(w.gpus);
        std::sort(gpus.begin(), gpus.end());
        for (int16_t g : gpus) {
          f.milli[g] = 0;
          got.push_back({.worker = worker, .node_idx = idx, .gpu_idx = g, .milli = 1000});
        }
      } else if (w.gpu_milli.value() > 0) {
        if (n.mig_enabled) continue;
        const int16_t g = static_cast<int16_t>(uniform(0, n.gpu_count - 1));
        if (f.milli[g] < w.gpu_milli.value()) continue;
        f.milli[g] -= static_cast<int>(w.gpu_milli.value());
        got.push_back({.worker = worker,
                       .node_idx = idx,
                       .gpu_idx = g,
                       .milli = static_cast<int16_t>(w.gpu_milli.value())});
      } else if (!w.mig_profile.empty()) {
        if (!mig_slot(j, idx, worker, got)) continue;
      } else {
        got.push_back({.worker = worker, .node_idx = idx});
      }
      f.cpu -= w.cpu.value();
      f.memory -= w.memory.value();
      j.placement.insert(j.placement.end(), got.begin(), got.end());
      return true;
    }
    return false;
  }

  bool mig_slot(const SnapshotJob& j, int idx, int worker, std::vector<Assignment>& got) {
    const SnapshotNode& n = snap_.nodes[idx];
    const model::Accelerator* accel = snap_.accelerators[n.gpu_model];
    if (!n.mig_enabled || accel == nullptr) return false;
    for (size_t p = 0; p < accel->mig_profiles.size(); ++p) {
      const model::MigProfile& prof = accel->mig_profiles[p];
      if (prof.name != j.worker.mig_profile) continue;
      const int16_t g = static_cast<int16_t>(uniform(0, n.gpu_count - 1));
      std::vector<int> starts;
      for (int s = 0; s < model::kMigMemorySlices; ++s) {
        if (((prof.start_mask >> s) & 1) && !(free_[idx].mig[g] & prof.slot_bits(s)))
          starts.push_back(s);
      }
      if (starts.empty()) return false;
      const int s = pick(starts);
      free_[idx].mig[g] |= prof.slot_bits(s);
      got.push_back({.worker = worker,
                     .node_idx = idx,
                     .gpu_idx = g,
                     .mig_profile = static_cast<int8_t>(p),
                     .mig_start = static_cast<int8_t>(s)});
      return true;
    }
    return false;
  }

  std::mt19937_64 rng_;
  Snapshot snap_;
  std::vector<Free> free_;
};

}  // namespace trainyard::sched::testing
