// Small builder of scheduler snapshots for tests:
//   SnapshotForTest().node("n1", 8, "H100").pending(1, {.gpus = 4}).build();
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sched/snapshot.h"
#include "sched/snapshot_builder.h"

namespace trainyard::sched::testing {

struct NodeOpts {
  int cpu = 64;
  int mem_gib = 512;
  std::string rack;
  bool mig = false;
  model::Labels labels;
  bool schedulable = true;
  std::string pool;  // add the pool first (pool()) so the node finds it
};

struct JobOpts {
  int gpus = 1;  // per worker
  int workers = 1;
  int milli = 0;
  std::string mig;
  int cpu = 0;
  int priority = 0;
  std::string team;
  bool preemptible = true;
  double submitted = 0;
  double runtime_limit = 0;
  double remaining = -1;
  double attained_gpu_seconds = 0;
  std::vector<std::string> models;
  model::Labels selector;
  int64_t waiting_on = -1;
};

// One worker's GPUs on a node, for running jobs: {"n1", {0, 1}}.
struct On {
  std::string node;
  std::vector<int> gpus;
};

class SnapshotForTest {
 public:
  SnapshotForTest& now(double s) {
    snap_.now = util::from_seconds(s);
    return *this;
  }
  SnapshotForTest& node(const std::string& name, int gpus, const std::string& gpu_model,
                        const NodeOpts& o = {}) {
    model::Node n;
    n.id = util::NodeId(static_cast<int64_t>(snap_.nodes.size()) + 1);
    n.name = name;
    n.gpu_model = gpu_model;
    n.gpu_count = gpus;
    n.mig_enabled = o.mig;
    n.cpu = model::CpuMilli(int64_t{o.cpu} * 1000);
    n.memory = model::gib(o.mem_gib);
    n.rack = o.rack;
    n.labels = o.labels;
    n.state = o.schedulable ? model::NodeState::Ready : model::NodeState::Draining;
    n.pool = o.pool;
    add_node(snap_, n);
    return *this;
  }
  SnapshotForTest& pool(const model::Pool& p) {
    add_pool(snap_, p);
    return *this;
  }
  SnapshotForTest& team(const std::string& name, double weight = 1.0,
                        const std::string& cohort = "", int nominal_gpus = -1,
                        int borrow_limit_gpus = -1) {
    model::Team t;
    t.name = name;
    t.weight = weight;
    t.cohort = cohort;
    if (nominal_gpus >= 0) {
      t.quotas[model::kAnyGpuModel] = {
          model::GpuMilli(nominal_gpus * 1000),
          model::GpuMilli(borrow_limit_gpus < 0 ? -1 : borrow_limit_gpus * 1000)};
    }
    add_team(snap_, t);
    return *this;
  }
  SnapshotForTest& pending(int64_t id, const JobOpts& o = {}) {
    snap_.jobs.push_back(make(id, o));
    return *this;
  }
  SnapshotForTest& running(int64_t id, const JobOpts& o, const std::vector<On>& where,
                           double started = 0, JobPhase phase = JobPhase::Running) {
    SnapshotJob j = make(id, o);
    j.phase = phase;
    j.started = util::from_seconds(started);
    int worker = 0;
    for (const On& on : where) {
      const int node_idx = index_of(on.node);
      for (int g : on.gpus) {
        j.placement.push_back({.worker = worker,
                               .node_idx = node_idx,
                               .gpu_idx = static_cast<int16_t>(g),
                               .milli = static_cast<int16_t>(o.milli > 0 ? o.milli : 1000)});
      }
      ++worker;
    }
    snap_.jobs.push_back(std::move(j));
    return *this;
  }
  Snapshot build() const { return snap_; }
  Snapshot& raw() { return snap_; }

 private:
  int index_of(const std::string& name) const {
    for (size_t i = 0; i < snap_.nodes.size(); ++i) {
      if (snap_.nodes[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
  SnapshotJob make(int64_t id, const JobOpts& o) const {
    model::JobSpec spec;
    spec.team = o.team;
    spec.priority = o.priority;
    spec.preemptible = o.preemptible;
    spec.workers = o.workers;
    spec.worker.gpus = o.milli > 0 || !o.mig.empty() ? 0 : o.gpus;
    spec.worker.gpu_milli = model::GpuMilli(o.milli);
    spec.worker.mig_profile = o.mig;
    spec.worker.cpu = model::CpuMilli(int64_t{o.cpu} * 1000);
    spec.allowed_gpu_models = o.models;
    spec.node_selector = o.selector;
    spec.runtime_limit = util::seconds_f(o.runtime_limit);
    SnapshotJob j = make_pending_job(snap_, util::JobId(id), spec, util::from_seconds(o.submitted));
    if (o.remaining >= 0) j.remaining = util::seconds_f(o.remaining);
    j.attained_gpu_time = util::seconds_f(o.attained_gpu_seconds);
    j.waiting_on = util::JobId(o.waiting_on);
    return j;
  }

  Snapshot snap_;
};

}  // namespace trainyard::sched::testing
