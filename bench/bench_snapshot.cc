#include "bench/bench_snapshot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "model/node.h"
#include "model/team.h"
#include "sched/snapshot_builder.h"

namespace trainyard::bench {
namespace {

using sched::Assignment;
using sched::JobPhase;
using sched::Snapshot;
using sched::SnapshotJob;
using util::Duration;

constexpr int kGpus = 8;
constexpr int kMigShare = 2;  // percent of nodes that are MIG-enabled A100-80GB

// std distributions are implementation-defined; these helpers make snapshots portable.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  int below(int n) { return static_cast<int>(gen_() % static_cast<uint64_t>(n)); }
  double unit() { return static_cast<double>(gen_() >> 11) * 0x1p-53; }
  bool chance(double p) { return unit() < p; }
  double log_uniform(double lo, double hi) { return lo * std::pow(hi / lo, unit()); }

 private:
  std::mt19937_64 gen_;
};

struct ModelMix {
  const char* name;
  double share;
  int cpu_cores;
  int mem_gib;
};
constexpr std::array<ModelMix, 5> kModels{{{"H100-80GB", 0.25, 112, 2048},
                                           {"A100-80GB", 0.25, 96, 1024},
                                           {"A100-40GB", 0.15, 96, 1024},
                                           {"V100-32GB", 0.20, 64, 512},
                                           {"L4", 0.15, 48, 384}}};

// Philly-like request mix (Jeon et al., ATC'19), plus a little fractional and MIG demand of
// several sizes; CPU-only and multi-worker fractional requests only with rare_requests.
struct RequestKind {
  double share;
  int workers;
  int gpus;
  int milli;
  const char* mig;
};
constexpr std::array<RequestKind, 16> kRequests{{{0.618, 1, 1, 0, ""},
                                                 {0.12, 1, 2, 0, ""},
                                                 {0.10, 1, 4, 0, ""},
                                                 {0.08, 1, 8, 0, ""},
                                                 {0.01, 2, 4, 0, ""},
                                                 {0.03, 2, 8, 0, ""},
                                                 {0.015, 4, 8, 0, ""},
                                                 {0.005, 8, 8, 0, ""},
                                                 {0.004, 1, 0, 500, ""},
                                                 {0.003, 1, 0, 250, ""},
                                                 {0.002, 1, 0, 750, ""},
                                                 {0.001, 2, 0, 500, ""},
                                                 {0.006, 1, 0, 0, "1g.10gb"},
                                                 {0.002, 1, 0, 0, "2g.20gb"},
                                                 {0.002, 1, 0, 0, "3g.40gb"},
                                                 {0.002, 1, 0, 0, ""}}};

constexpr std::array<int, 6> kLimitHours{1, 4, 12, 24, 72, 168};

template <typename T, size_t N>
const T& pick(Rng& rng, const std::array<T, N>& mix) {
  double u = rng.unit();
  for (const T& m : mix) {
    if (u < m.share) return m;
    u -= m.share;
  }
  return mix.front();
}

// Free capacity while running jobs are laid out.
struct Free {
  int model = 0;
  bool mig = false;
  int64_t cpu = 0;
  int64_t mem = 0;
  std::array<int16_t, kGpus> milli{};
  std::array<uint8_t, kGpus> mig_used{};
};

class Generator {
 public:
  explicit Generator(const ClusterShape& shape) : shape_(shape), rng_(shape.seed) {}

  Snapshot build() {
    snap_.now = util::from_seconds(30.0 * 86400);
    add_nodes();
    add_teams();
    add_running();
    add_pending();
    add_arrival_order();
    return std::move(snap_);
  }

 private:
  void add_nodes() {
    for (int i = 0; i < shape_.nodes; ++i) {
      const ModelMix& m = pick(rng_, kModels);
      model::Node n;
      n.id = util::NodeId(i + 1);
      n.name = fmt::format("node-{}", i);
      n.gpu_count = kGpus;
      n.mig_enabled = rng_.below(100) < kMigShare;
      n.gpu_model = n.mig_enabled ? "A100-80GB" : m.name;
      n.pool = fmt::format("{}-{}", n.gpu_model, rng_.chance(0.2) ? "spot" : "ondemand");
      n.cpu = model::CpuMilli(int64_t{m.cpu_cores} * 1000);
      n.memory = model::gib(m.mem_gib);
      if (shape_.nodes_per_rack > 0) n.rack = fmt::format("rack-{}", i / shape_.nodes_per_rack);
      n.state = rng_.chance(0.005) ? model::NodeState::Draining : model::NodeState::Ready;
      sched::add_node(snap_, n);
      Free f{.model = sched::intern_gpu_model(snap_, n.gpu_model),
             .mig = n.mig_enabled,
             .cpu = n.cpu.value(),
             .mem = n.memory.value()};
      f.milli.fill(static_cast<int16_t>(model::kMilliPerGpu));
      free_.push_back(f);
    }
  }

  void add_teams() {
    double total_weight = 0;
    for (int t = 0; t < shape_.teams; ++t) total_weight += 1 + t % 4;
    const double capacity = double{kGpus} * shape_.nodes * model::kMilliPerGpu;
    for (int t = 0; t < shape_.teams; ++t) {
      model::Team team;
      team.name = fmt::format("team-{}", t);
      team.weight = 1 + t % 4;
      team.cohort = fmt::format("cohort-{}", t / 10);
      if (shape_.team_quotas) {
        const auto nominal = static_cast<int64_t>(capacity * team.weight / total_weight);
        team.quotas[model::kAnyGpuModel] = {model::GpuMilli(nominal), model::GpuMilli(-1)};
      }
      sched::add_team(snap_, team);
    }
  }

  const RequestKind& pick_request() {
    const RequestKind& kind = pick(rng_, kRequests);
    const bool rare = kind.gpus == 0 && (kind.workers > 1 || (kind.milli == 0 && !*kind.mig));
    return rare && !shape_.rare_requests ? kRequests.front() : kind;
  }

  // A request with the fields every job shares; placement and times are set by the caller.
  SnapshotJob request(const RequestKind& kind) {
    SnapshotJob j;
    j.id = util::JobId(static_cast<int64_t>(snap_.jobs.size()) + 1);
    const double u = rng_.unit();
    j.team = std::min(shape_.teams - 1, static_cast<int>(shape_.teams * u * u));  // skewed
    const int p = rng_.below(10);
    j.priority = p < 2   ? model::kPriorityLow
                 : p < 9 ? model::kPriorityNormal
                         : model::kPriorityHigh;
    j.preemptible = rng_.chance(0.85);
    j.workers = kind.workers;
    j.worker.gpus = kind.gpus;
    j.worker.gpu_milli = model::GpuMilli(kind.milli);
    j.worker.mig_profile = kind.mig;
    const int cpu_per_gpu = rng_.chance(0.05) ? 12 : 6;
    const int units = std::max(kind.gpus, 1);
    j.worker.cpu = model::CpuMilli(int64_t{cpu_per_gpu} * units * 1000 / (kind.gpus > 0 ? 1 : 2));
    j.worker.memory = model::gib(int64_t{48} * units / (kind.gpus > 0 ? 1 : 2));
    return j;
  }

  Duration pick_limit(Duration at_least) {
    if (rng_.chance(0.1)) return Duration(0);
    for (int h : kLimitHours) {
      const Duration d = std::chrono::hours(h);
      if (d >= at_least && rng_.chance(0.6)) return d;
    }
    return std::chrono::hours(kLimitHours.back()) + at_least;
  }

  bool fits_cpu_mem(const Free& f, const SnapshotJob& j) const {
    return f.cpu >= j.worker.cpu.value() && f.mem >= j.worker.memory.value();
  }

  void take(int node, int gpu, const SnapshotJob& j, int worker, Assignment a) {
    Free& f = free_[node];
    a.worker = worker;
    a.node_idx = node;
    a.gpu_idx = static_cast<int16_t>(gpu);
    if (a.mig_profile < 0) f.milli[gpu] = static_cast<int16_t>(f.milli[gpu] - a.milli);
    placement_.push_back(a);
    (void)j;
  }

  // Whole GPUs for one worker on `node` (same model as `model`, or any when -1).
  bool place_worker(int node, const SnapshotJob& j, int worker, int model) {
    Free& f = free_[node];
    if (f.mig || !snap_.nodes[node].schedulable || (model >= 0 && f.model != model)) return false;
    if (!fits_cpu_mem(f, j)) return false;
    int whole = 0;
    for (int g = 0; g < kGpus; ++g) whole += f.milli[g] == model::kMilliPerGpu ? 1 : 0;
    if (whole < j.worker.gpus) return false;
    f.cpu -= j.worker.cpu.value();
    f.mem -= j.worker.memory.value();
    int taken = 0;
    for (int g = 0; g < kGpus && taken < j.worker.gpus; ++g) {
      if (f.milli[g] != model::kMilliPerGpu) continue;
      take(node, g, j, worker, {.milli = static_cast<int16_t>(model::kMilliPerGpu)});
      ++taken;
    }
    return true;
  }

  bool place_small(int node, const SnapshotJob& j) {
    Free& f = free_[node];
    if (!snap_.nodes[node].schedulable || !fits_cpu_mem(f, j)) return false;
    if (!j.worker.mig_profile.empty()) {
      if (!f.mig) return false;
      const auto* accel = snap_.accelerators[f.model];
      int profile = 0;
      while (accel->mig_profiles[profile].name != j.worker.mig_profile) ++profile;
      const model::MigProfile& p = accel->mig_profiles[profile];
      for (int g = 0; g < kGpus; ++g) {
        for (int s = 0; s < model::kMigMemorySlices; ++s) {
          if (!((p.start_mask >> s) & 1) || (f.mig_used[g] & p.slot_bits(s))) continue;
          f.mig_used[g] = static_cast<uint8_t>(f.mig_used[g] | p.slot_bits(s));
          f.cpu -= j.worker.cpu.value();
          f.mem -= j.worker.memory.value();
          take(node, g, j, 0,
               {.mig_profile = static_cast<int8_t>(profile), .mig_start = static_cast<int8_t>(s)});
          return true;
        }
      }
      return false;
    }
    if (f.mig) return false;
    if (j.worker.gpu_milli.value() == 0) {  // CPU-only
      f.cpu -= j.worker.cpu.value();
      f.mem -= j.worker.memory.value();
      placement_.push_back({.worker = 0, .node_idx = node});
      return true;
    }
    for (int g = 0; g < kGpus; ++g) {
      if (f.milli[g] < j.worker.gpu_milli.value()) continue;
      f.cpu -= j.worker.cpu.value();
      f.mem -= j.worker.memory.value();
      take(node, g, j, 0, {.milli = static_cast<int16_t>(j.worker.gpu_milli.value())});
      return true;
    }
    return false;
  }

  // Lays the job out from a random node on (fragmenting the cluster as real histories do).
  // Whole-GPU gangs take distinct nodes of one model.
  bool place_running(const SnapshotJob& j) {
    placement_.clear();
    const int n = shape_.nodes;
    const int start = rng_.below(n);
    if (j.worker.gpus == 0) {
      for (int k = 0; k < n; ++k) {
        if (place_small((start + k) % n, j)) return true;
      }
      return false;
    }
    int model = -1;
    int worker = 0;
    for (int k = 0; k < n && worker < j.workers; ++k) {
      const int node = (start + k) % n;
      if (!place_worker(node, j, worker, model)) continue;
      model = free_[node].model;
      ++worker;
    }
    if (worker == j.workers) return true;
    unplace(j);
    return false;
  }

  void unplace(const SnapshotJob& j) {
    int last = -1;
    for (const Assignment& a : placement_) {
      Free& f = free_[a.node_idx];
      f.milli[a.gpu_idx] = static_cast<int16_t>(f.milli[a.gpu_idx] + a.milli);
      if (a.node_idx * 64 + a.worker != last) {
        f.cpu += j.worker.cpu.value();
        f.mem += j.worker.memory.value();
      }
      last = a.node_idx * 64 + a.worker;
    }
    placement_.clear();
  }

  void add_running() {
    const double target = shape_.busy * kGpus * shape_.nodes * model::kMilliPerGpu;
    double busy = 0;
    int failures = 0;
    while (busy < target && failures < 4 * shape_.nodes) {
      const RequestKind& kind = pick_request();
      if (kind.gpus == 0 && kind.workers > 1) continue;  // laid out one worker at a time only
      SnapshotJob j = request(kind);
      if (!place_running(j)) {
        ++failures;
        continue;
      }
      j.placement = placement_;
      j.phase = rng_.chance(0.01) ? JobPhase::Preempting : JobPhase::Running;
      const Duration elapsed = util::seconds_f(rng_.log_uniform(60, 3 * 86400));
      j.submitted = snap_.now - elapsed - util::seconds_f(rng_.log_uniform(1, 86400));
      j.queued_since = j.submitted;
      j.started = snap_.now - elapsed;
      j.runtime_limit = pick_limit(elapsed);
      const Duration left =
          j.runtime_limit.count() > 0 ? j.runtime_limit - elapsed : util::seconds_f(86400 * 7);
      j.remaining = Duration(static_cast<int64_t>(static_cast<double>(left.count()) * rng_.unit()));
      const double gpus = static_cast<double>(j.gpu_share().value()) / model::kMilliPerGpu;
      j.attained_gpu_time = util::seconds_f(util::to_seconds(elapsed) * gpus);
      busy += static_cast<double>(j.gpu_share().value());
      snap_.jobs.push_back(std::move(j));
    }
  }

  void add_pending() {
    const int64_t first_id = static_cast<int64_t>(snap_.jobs.size()) + 1;
    std::vector<double> ages(shape_.pending);
    for (double& a : ages) a = rng_.log_uniform(10, 3 * 86400);
    std::sort(ages.begin(), ages.end(), std::greater<>());  // ids grow with submit time
    const std::array<uint64_t, 3> masks{uint64_t{1} << 0, (uint64_t{1} << 1) | (uint64_t{1} << 2),
                                        (uint64_t{1} << 0) | (uint64_t{1} << 1)};
    for (int i = 0; i < shape_.pending; ++i) {
      SnapshotJob j = request(pick_request());
      j.submitted = snap_.now - util::seconds_f(ages[i]);
      j.queued_since = j.submitted;
      j.remaining = util::seconds_f(rng_.log_uniform(100, 4 * 86400));
      j.runtime_limit = pick_limit(j.remaining);
      if (j.worker.gpus > 0 && rng_.chance(0.2)) j.gpu_model_mask = masks[rng_.below(3)];
      if (rng_.chance(0.02)) {
        const ModelMix& m = pick(rng_, kModels);
        j.node_selector[model::kLabelPool] = fmt::format("{}-spot", m.name);
      }
      if (i > 0 && rng_.chance(0.03)) j.waiting_on = util::JobId(first_id + rng_.below(i));
      if (rng_.chance(0.15)) {  // requeued after a preemption
        j.last_run = util::seconds_f(rng_.log_uniform(60, 86400));
        j.attained_gpu_time = j.last_run * std::max(1, j.worker.gpus * j.workers);
        j.queued_since = snap_.now - util::seconds_f(ages[i] * rng_.unit());
      }
      snap_.jobs.push_back(std::move(j));
    }
  }

  // The ranking hint drivers keep (Snapshot::arrival_order).
  void add_arrival_order() {
    auto& order = snap_.arrival_order;
    order.resize(snap_.jobs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      const SnapshotJob& ja = snap_.jobs[a];
      const SnapshotJob& jb = snap_.jobs[b];
      return ja.submitted != jb.submitted ? ja.submitted < jb.submitted : ja.id < jb.id;
    });
  }

  ClusterShape shape_;
  Rng rng_;
  Snapshot snap_;
  std::vector<Free> free_;
  std::vector<Assignment> placement_;
};

}  // namespace

Snapshot make_bench_snapshot(const ClusterShape& shape) {
  return Generator(shape).build();
}

}  // namespace trainyard::bench
