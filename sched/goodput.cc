// The goodput policy: Pollux's (OSDI'21) allocation with Sia's (SOSP'23) choice of GPU type,
// over the jobs' speed models (model/scaling.h).
//
// Each plan() reallocates the whole cluster in three passes:
//   1. Base: in Tiresias's order (2D-LAS: attained-service queues, then arrival; jobs of one
//      queue do not displace each other, which pure least-attained-service would do back and
//      forth), each job gets its smallest
//      gang (min_workers for elastic jobs, all workers for rigid ones) on the GPU type where
//      the model says it runs fastest, while GPUs of that type are left. Jobs that still run
//      their minimum run time, or are not preemptible, keep what they hold.
//   2. Growth: the GPUs left go one worker at a time to the elastic job whose speed-up gains
//      most, by Pollux's objective: the power mean with p = -1 of the jobs' speed-ups, i.e.
//      the largest drop of 1/speed-up per GPU. A job's batch size follows its allocation (the
//      model's best global batch for that many GPUs: with per-epoch gradient statistics, the
//      best in the job's current epoch, which it then adapts epoch by epoch), which is how
//      statistical efficiency enters: a larger batch needs more iterations.
//   3. Realisation: a running job whose allocation changes is stopped (PreemptCause::Resize)
//      and restarts from its checkpoint at the new size, but only when its modelled speed
//      rises by restart_gain or more (a restart costs the grace period and the restart delay)
//      or when its GPUs go to others; pending jobs are placed (packed on the fewest nodes of
//      their type) in that order. Passes 1-2 count GPUs only, so a running job grows or moves
//      only to a gang that fits the free nodes (CPU, memory, fragments), at most the largest
//      one that does: a restart that could only place what it has would recur every plan.
// Running jobs are only moved at checkpoints: within min_runtime of their start, or more than
// a round after their newest checkpoint, they keep what they hold (passes 1-2 work around
// them). A job that never checkpoints is never moved once started, nor is a rigid job.
// Jobs without a speed model run at the pace measured from their step metrics (the server
// fills SnapshotJob::measured), else proportional to their GPUs (elastic) or fixed (rigid).
// A pending job whose gang does not fit its type's free nodes (CPU, memory, fragments) starts
// with its smallest gang on another type where it fits now, unless that type is more than
// restart_gain slower for it: GPUs do not sit idle while a job could use them.
// Fractional, MIG and CPU-only jobs are placed in that order where they fit, and never preempt.
// Team quotas hold as under the other policies: a job gets GPUs of a model only within its
// team's nominal quota plus what it may borrow from its cohort (QuotaLedger), in passes 1-2 and
// for the jobs placed last; a running job whose team is over quota is not kept on that account.
// Lent quota comes back as the borrowers' elastic jobs are reallocated at their checkpoints;
// the policy never preempts a rigid job to reclaim it (fair does). Team budgets hold too.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sched/admission.h"
#include "sched/cluster_state.h"
#include "sched/internal/goodput.h"
#include "sched/internal/plan_context.h"
#include "sched/placement.h"
#include "sched/queue_order.h"

namespace trainyard::sched::internal {
namespace {

constexpr int kLookAhead = 16;  // workers one growth step may add

struct Candidate {
  int idx = -1;  // into snap.jobs
  bool running = false;
  bool locked = false;  // keeps its placement this plan (minimum run time, not preemptible)
  int cur_model = -1;
  int cur_workers = 0;
  int model = -1;  // target GPU model; -1 = none this plan
  int workers = 0;
  int quota_cap = INT32_MAX;  // the most workers its team's quota allows on `model`
  int64_t over_milli = 0;     // pass 1 found room but the quota refused: by how much
  int64_t need = 0;           // whole GPUs of its smallest gang (read once: passes stay in cands_)
};

bool whole_gpus(const SnapshotJob& j) {
  return j.worker.gpus > 0 && j.worker.mig_profile.empty();
}

class Goodput {
 public:
  Goodput(const Snapshot& snap, const PolicyConfig& cfg, Plan& plan)
      : snap_(snap),
        cfg_(cfg),
        plan_(plan),
        gpus_per_node_(snap.gpu_models.size(), 0),
        leaving_(snap.gpu_models.size(), 0),
        selectors_(snap),
        migs_(snap),
        ledger_(snap, false),
        held_(snap, false),
        per_key_(static_cast<size_t>(ledger_.keys()), 0) {
    for (const SnapshotNode& n : snap.nodes) {
      if (n.schedulable && !n.mig_enabled && n.gpu_model >= 0)
        gpus_per_node_[n.gpu_model] = std::max(gpus_per_node_[n.gpu_model], n.gpu_count);
    }
  }

  void run() {
    collect();
    ClusterState what_if(snap_);
    what_if_ = &what_if;
    for (const Candidate& c : cands_) {
      if (c.running && !c.locked) {
        const SnapshotJob& j = snap_.jobs[c.idx];
        what_if.release(j.placement, j.worker);
        ledger_.add(j, j.placement, -1);  // its quota is given again in passes 1-2
      }
    }
    free_.assign(snap_.gpu_models.size(), 0);
    for (int m = 0; m < static_cast<int>(snap_.gpu_models.size()); ++m) {
      for (int f = 1; f <= model::kMaxGpusPerNode; ++f)
        free_[m] += static_cast<int64_t>(what_if.bucket(m, f).size()) * f;
    }
    base_pass();
    growth_pass();
    realise();
    what_if_ = nullptr;
  }

 private:
  int per_worker(const SnapshotJob& j) const { return std::max(1, j.worker.gpus); }
  int min_workers(const SnapshotJob& j) const {
    return j.elastic() ? std::max(1, j.min_workers) : j.workers;
  }
  int max_workers(const SnapshotJob& j) const {
    return j.elastic() ? std::max(j.max_workers, min_workers(j)) : j.workers;
  }
  bool allowed(const SnapshotJob& j, int m) const {
    return j.gpu_model_mask == 0 || ((j.gpu_model_mask >> m) & 1u) != 0;
  }

  // Whether `j`'s team may take `gpus` more whole GPUs of model `m` (0 when it may; else by
  // how many milli-GPUs it would go over); take_quota() also counts them.
  int64_t quota_refuses(const SnapshotJob& j, int m, int64_t gpus) {  // gpus > 0
    if (!ledger_.has_quotas() || j.team < 0 || gpus <= 0) return 0;
    const QuotaVerdict v = ledger_.check_usage(j.team, usage_of(m, gpus));
    return v.admitted ? 0 : std::max<int64_t>(1, v.over_milli);
  }
  void take_quota(const SnapshotJob& j, int m, int64_t gpus) {
    if (!ledger_.has_quotas() || j.team < 0 || gpus <= 0) return;
    ledger_.add_usage(j.team, usage_of(m, gpus), +1);
  }
  // Usage per quota key of `gpus` whole GPUs of model `m` (in per_key_).
  const std::vector<int64_t>& usage_of(int m, int64_t gpus) {
    std::fill(per_key_.begin(), per_key_.end(), 0);
    per_key_[m] = gpus * model::kMilliPerGpu;
    per_key_.back() = gpus * model::kMilliPerGpu;  // the "all models" key
    return per_key_;
  }

  // Modelled speed of `j` with `k` workers packed on GPUs of model `m`, and the batch for it.
  std::pair<double, int> speed(const SnapshotJob& j, int m, int k) const {
    if (k <= 0) return {0.0, 0};
    const int gpus = k * per_worker(j);
    if (j.scaling != nullptr) {
      const int gpn = std::max(1, gpus_per_node_[m]);
      const int nodes = (gpus + gpn - 1) / gpn;
      const double cs =
          model::gpu_compute_speed(snap_.accelerators[m], j.scaling->reference_bandwidth_gbps);
      const model::ScalingModel& sm = *j.scaling;
      if (j.elastic() && sm.has_epochs()) {
        // The pace in the job's current epoch at the batch it would adapt to there.
        const size_t e = sm.epoch_at(done_fraction(j));
        const double batch = sm.adaptive_batch(e, gpus, nodes, cs);
        return {sm.epoch_speed(e, gpus, nodes, batch, cs), static_cast<int>(std::lround(batch))};
      }
      const double batch = j.elastic() ? sm.best_batch(gpus, nodes, cs) : sm.batch;
      return {sm.speed(gpus, nodes, batch, cs), static_cast<int>(batch)};
    }
    if (!j.elastic()) return {1.0, 0};
    if (!j.measured.empty()) return {measured_speed(j.measured, k), 0};
    return {static_cast<double>(k) / min_workers(j), 0};
  }

  // The share of its work that `j` has done, from its remaining run time (0 when unknown).
  static double done_fraction(const SnapshotJob& j) {
    if (j.remaining == kUnknownDuration || j.scaling->work_seconds <= 0) return 0;
    return std::clamp(1.0 - util::to_seconds(j.remaining) / j.scaling->work_seconds, 0.0, 1.0);
  }

  // Steps per second at `k` workers from the measured points: linear between them; beyond the
  // largest, the power law through the two largest (exponent clamped to 0..1; with one point,
  // 1: linear, Pollux's prior before it has measured); below the smallest, proportional.
  static double measured_speed(const std::vector<MeasuredSpeed>& m, int k) {
    const MeasuredSpeed& lo = m.front();
    const MeasuredSpeed& hi = m.back();
    if (k <= lo.workers) return lo.steps_per_second * k / std::max(1, lo.workers);
    if (k >= hi.workers) {
      double exponent = 1.0;
      if (m.size() >= 2) {
        const MeasuredSpeed& prev = m[m.size() - 2];
        if (prev.steps_per_second > 0 && hi.steps_per_second > 0 && hi.workers > prev.workers) {
          exponent = std::log(hi.steps_per_second / prev.steps_per_second) /
                     std::log(static_cast<double>(hi.workers) / prev.workers);
          exponent = std::clamp(exponent, 0.0, 1.0);
        }
      }
      return hi.steps_per_second * std::pow(static_cast<double>(k) / hi.workers, exponent);
    }
    for (size_t i = 1; i < m.size(); ++i) {
      if (k > m[i].workers) continue;
      const double t =
          static_cast<double>(k - m[i - 1].workers) / (m[i].workers - m[i - 1].workers);
      return m[i - 1].steps_per_second + t * (m[i].steps_per_second - m[i - 1].steps_per_second);
    }
    return hi.steps_per_second;
  }

  void collect() {
    const std::vector<int> order = rank_jobs(snap_, cfg_, QueueOrderKind::Goodput, true);
    for (size_t i = 0; i < order.size(); ++i) {
      // Jobs are read in rank order, scattered over the job array: fetch ahead.
      if (i + 8 < order.size()) __builtin_prefetch(&snap_.jobs[order[i + 8]]);
      const int idx = order[i];
      const SnapshotJob& j = snap_.jobs[idx];
      if (j.phase == JobPhase::Preempting) {  // its GPUs come free when it has stopped
        if (whole_gpus(j) && !j.placement.empty())
          leaving_[snap_.nodes[j.placement.front().node_idx].gpu_model] += j.gpu_share().value();
        continue;
      }
      Shape shape{};
      if (j.phase == JobPhase::Pending) {
        if (j.waiting_on != util::kNoJob) {
          wait(j, Stage::Dependency, WaitCode::DependencyUnfinished, j.waiting_on.value());
          continue;
        }
        if (j.team >= 0 && snap_.teams[j.team].budget_left <= 0) {
          wait(j, Stage::Admission, WaitCode::BudgetExhausted, j.team);
          continue;
        }
        // Whether a job could ever fit depends on its shape only: asked once per shape.
        shape = shape_of(j);
        auto [it, fresh] = ever_.try_emplace(shape, kFits);
        if (fresh) {
          uint8_t filter = 0;
          const PlaceOptions opts = place_options(j);
          if (never_fits(j, snap_, &filter, opts, &groups(opts.selector_matches)))
            it->second = filter;
        }
        if (it->second != kFits) {
          plan_.waiting.push_back({j.id, Stage::Placement, WaitCode::NeverFits,
                                   j.gpu_share().value(), static_cast<uint8_t>(it->second)});
          continue;
        }
      }
      if (!whole_gpus(j)) {
        if (!j.is_running()) others_.push_back(idx);
        continue;
      }
      Candidate c{
          .idx = idx, .running = j.is_running(), .need = int64_t{min_workers(j)} * per_worker(j)};
      if (c.running) {
        c.cur_model = snap_.nodes[j.placement.front().node_idx].gpu_model;
        c.cur_workers = j.workers;
        // Restarts happen at checkpoints: a job whose newest checkpoint is more than a round
        // old keeps its GPUs until it saves again (one that never saves, to its end), so no
        // reallocation throws much work away and none can cycle without progress.
        // A rigid job is never moved once started: it cannot shrink, and pausing it for a job
        // whose gang may not fit the GPUs it frees (fragments) only throws work away; Tiresias
        // is the policy that pauses rigid jobs.
        c.locked = !j.elastic() || !j.preemptible || snap_.now - j.started < cfg_.min_runtime ||
                   j.work_at_risk(snap_.now) > cfg_.goodput.round;
        if (c.locked) {
          c.model = c.cur_model;
          c.workers = c.cur_workers;
        }
      }
      cands_.push_back(c);
      shapes_.push_back(shape);
    }
  }

  // Pass 1: every job its smallest gang on its fastest type, in Tiresias order.
  void base_pass() {
    auto largest = [&] {
      return free_.empty() ? 0 : *std::max_element(free_.begin(), free_.end());
    };
    int64_t most_free = largest();
    for (Candidate& c : cands_) {
      if (c.locked || c.need > most_free) continue;  // no type has room: the job is not read
      const SnapshotJob& j = snap_.jobs[c.idx];
      const int k = min_workers(j);
      const int64_t need = c.need;
      double best = 0;
      for (int m = 0; m < static_cast<int>(free_.size()); ++m) {
        if (!allowed(j, m) || free_[m] < need || gpus_per_node_[m] < per_worker(j)) continue;
        if (const int64_t over = quota_refuses(j, m, need); over > 0) {
          c.over_milli = c.over_milli > 0 ? std::min(c.over_milli, over) : over;
          continue;
        }
        double s = speed(j, m, k).first;
        if (c.running && m == c.cur_model) s *= 1 + cfg_.goodput.restart_gain;  // stay put
        if (s > best) {
          best = s;
          c.model = m;
        }
      }
      if (c.model < 0) continue;
      c.over_milli = 0;
      c.workers = k;
      free_[c.model] -= need;
      take_quota(j, c.model, need);
      most_free = largest();
    }
  }

  // Pass 2: the GPUs left go where 1/speed-up drops most per GPU. A step may add several
  // workers at once (up to kLookAhead), so that a job can cross a size that is slower than
  // its neighbours (a second node's synchronisation, a gradient-accumulation boundary).
  void growth_pass() {
    // gain, -rank (earlier first on ties), candidate, workers to add
    using Entry = std::tuple<double, int, int, int>;
    std::priority_queue<Entry> heap;
    auto push = [&](int ci) {
      const Candidate& c = cands_[ci];
      const SnapshotJob& j = snap_.jobs[c.idx];
      if (c.locked || c.model < 0 || c.workers >= std::min(max_workers(j), c.quota_cap)) return;
      const int per = per_worker(j);
      const int room = static_cast<int>(free_[c.model] / per);
      // Speed-ups relative to the job's smallest gang on this type (Pollux: relative to a
      // fair share), so jobs that asked for many GPUs weigh no more than others.
      const double base = speed(j, c.model, min_workers(j)).first;
      const double now = speed(j, c.model, c.workers).first / base;
      double best = 0;
      int add = 0;
      for (int k = c.workers + 1;
           k <= std::min({max_workers(j), c.quota_cap, c.workers + room, c.workers + kLookAhead});
           ++k) {
        const double next = speed(j, c.model, k).first / base;
        if (next <= now * 1.001) continue;  // no gain (or a loss) at this size
        double gain = (1.0 / now - 1.0 / next) / ((k - c.workers) * per);
        if (c.running && c.model == c.cur_model && k <= c.cur_workers)
          gain *= 1 + cfg_.goodput.restart_gain;  // keeping what it has costs no restart
        if (gain > best) {
          best = gain;
          add = k - c.workers;
        }
      }
      if (add == 0) return;
      // Least attained service first, as in pass 1: a job that has had less is likelier short.
      best /= 1.0 + cfg_.goodput.attained_weight * gpu_hours(j.attained_gpu_time);
      heap.emplace(best, -ci, ci, add);
    };
    for (int ci = 0; ci < static_cast<int>(cands_.size()); ++ci) push(ci);
    while (!heap.empty()) {
      const auto [gain, rank, ci, add] = heap.top();
      heap.pop();
      Candidate& c = cands_[ci];
      const SnapshotJob& j = snap_.jobs[c.idx];
      const int64_t need = int64_t{add} * per_worker(j);
      if (free_[c.model] < need) {
        push(ci);  // less room than when it was pushed: look again at what is left
        continue;
      }
      if (quota_refuses(j, c.model, need) > 0) {
        // The team's quota stops it short: the most it may still add, then look again.
        int may = add - 1;
        while (may > 0 && quota_refuses(j, c.model, int64_t{may} * per_worker(j)) > 0) --may;
        c.quota_cap = c.workers + may;
        push(ci);
        continue;
      }
      free_[c.model] -= need;
      take_quota(j, c.model, need);
      c.workers += add;
      push(ci);
    }
  }

  static double gpu_hours(Duration d) { return static_cast<double>(d.count()) / 3.6e9; }

  // Pass 3: stop the running jobs whose allocation changes enough, start what fits now.
  void realise() {
    ClusterState state(snap_);
    std::vector<int64_t> freeing = leaving_;
    // GPUs per model that the resized jobs will take, beyond their own, when they restart.
    std::vector<int64_t> promised(snap_.gpu_models.size(), 0);
    for (Candidate& c : cands_) {
      if (!c.running || c.locked) continue;
      const SnapshotJob& j = snap_.jobs[c.idx];
      if (c.model == c.cur_model && c.workers == c.cur_workers) continue;
      if (c.model >= 0 && (c.model != c.cur_model || c.workers > c.cur_workers)) {
        // Passes 1-2 count GPUs only: the gang it would restart with must fit them (CPU,
        // memory, fragments), else the restart places what it has again, and so on each plan.
        c.workers = fitting_workers(j, c.model, c.workers);
        if (c.workers == 0 || (c.model == c.cur_model && c.workers <= c.cur_workers)) continue;
      }
      if (c.model == c.cur_model && c.workers > c.cur_workers) {
        const double gain =
            speed(j, c.model, c.workers).first / speed(j, c.cur_model, c.cur_workers).first;
        if (gain < 1 + cfg_.goodput.restart_gain) continue;  // not worth a restart
      }
      plan_.preemptions.push_back({j.id, util::kNoJob, PreemptCause::Resize});
      freeing[c.cur_model] += j.gpu_share().value();
      if (c.model >= 0) {
        const int64_t keeps = c.model == c.cur_model ? int64_t{c.cur_workers} : 0;
        promised[c.model] += std::max<int64_t>(0, c.workers - keeps) * per_worker(j);
      }
    }
    const int64_t stopping = static_cast<int64_t>(plan_.preemptions.size());
    std::vector<Candidate*> unstarted;
    for (Candidate& c : cands_) {
      if (c.running) continue;
      if (c.model >= 0 && start(snap_.jobs[c.idx], c, state)) continue;
      unstarted.push_back(&c);
    }
    for (Candidate* cp : unstarted) {
      Candidate& c = *cp;
      const SnapshotJob& j = snap_.jobs[c.idx];
      __builtin_prefetch(&j);  // fill() reads it only after its cheap checks
      int64_t quota_over = 0;
      if (fill(j, c, state, promised, &quota_over)) continue;
      const int64_t need = int64_t{min_workers(j)} * j.worker.gpu_share().value();
      if (quota_over > 0) {
        wait(j, Stage::Admission, WaitCode::QuotaExceeded, quota_over);
      } else if (c.model < 0 && c.over_milli > 0) {
        wait(j, Stage::Admission, WaitCode::QuotaExceeded, c.over_milli);
      } else if (c.model >= 0 && freeing[c.model] >= need) {
        wait(j, Stage::Preemption, WaitCode::AwaitingVictims, stopping);
      } else {
        wait(j, Stage::Placement, WaitCode::NoCapacityNow, need);
      }
    }
    for (int idx : others_) {
      const SnapshotJob& j = snap_.jobs[idx];
      PlaceResult r = place(j, state, place_options(j));
      if (r.fit == Fit::Fits) {
        if (const QuotaVerdict v = held_.check(j, r.placement); !v.admitted) {
          wait(j, Stage::Admission, WaitCode::QuotaExceeded, v.over_milli);
          continue;
        }
        held_.add(j, r.placement, +1);
        state.apply(r.placement, j.worker);
        plan_.starts.push_back({j.id, std::move(r.placement)});
      } else {
        plan_.waiting.push_back(
            {j.id, Stage::Placement, WaitCode::NoCapacityNow, j.gpu_share().value(), r.filter});
      }
    }
  }

  // The largest gang of `j`, from `want` workers down to its minimum, that fits GPUs of model
  // `m` once every job that may move this plan has let go of its own (0: none fits).
  int fitting_workers(const SnapshotJob& j, int m, int want) {
    SnapshotJob shape = j;
    shape.gpu_model_mask = uint64_t{1} << m;
    PlaceOptions opts = place_options(j);
    opts.strategy = PlacementStrategy::Pack;
    for (int k = want; k >= min_workers(j); --k) {
      shape.workers = k;
      if (place(shape, *what_if_, opts).fit == Fit::Fits) return k;
    }
    return 0;
  }

  // Work conservation: a pending job that did not start where passes 1-2 put it (its gang did
  // not fit the free nodes of that type: CPU, memory, fragments), or that got no type there,
  // starts with its smallest gang on any type where it fits now, fastest first, within its
  // team's quota and leaving the GPUs promised to growing jobs. When it does not start but
  // some type has the room and only the quota refuses, `quota_over` says by how much.
  bool fill(const SnapshotJob& j, Candidate& c, ClusterState& state,
            const std::vector<int64_t>& promised, int64_t* quota_over) {
    const int64_t need = c.need;
    if (idle_starts_ != plan_.starts.size()) {  // whole free GPUs per type, as of now
      idle_starts_ = plan_.starts.size();
      idle_.assign(free_.size(), 0);
      most_idle_ = 0;
      for (int m = 0; m < static_cast<int>(free_.size()); ++m) {
        for (int f = 1; f <= model::kMaxGpusPerNode; ++f)
          idle_[m] += static_cast<int64_t>(state.bucket(m, f).size()) * f;
        most_idle_ = std::max(most_idle_, idle_[m] - promised[m]);
      }
    }
    if (need > most_idle_) return false;  // no type has the GPUs (a full cluster: most jobs)
    const Shape& own = shapes_[&c - cands_.data()];
    if (unfit_all_.contains(own)) return false;
    Shape shape = own;
    shape.workers = min_workers(j);
    std::vector<std::pair<double, int>>& types = types_;
    types.clear();
    for (int m = 0; m < static_cast<int>(free_.size()); ++m) {
      if (!allowed(j, m) || gpus_per_node_[m] < per_worker(j) || idle_[m] - need < promised[m])
        continue;
      shape.model_mask = uint64_t{1} << m;
      if (unfit_.contains(shape)) continue;  // capacity only shrinks while starts are placed
      types.emplace_back(-speed(j, m, min_workers(j)).first, m);
    }
    std::sort(types.begin(), types.end());
    // Not on a type much slower than its target: it waits for that one (Sia's point).
    const double target = c.model >= 0 ? speed(j, c.model, c.workers).first : 0.0;
    bool tried_all = true;
    for (const auto& [neg_speed, m] : types) {
      if (-neg_speed * (1 + cfg_.goodput.restart_gain) < target) {
        tried_all = false;
        break;
      }
      shape.model_mask = uint64_t{1} << m;
      Candidate at = c;
      at.model = m;
      at.workers = min_workers(j);
      int64_t over = 0;
      if (start(j, at, state, &over)) return true;
      if (over > 0) {
        *quota_over = *quota_over > 0 ? std::min(*quota_over, over) : over;
      } else {
        unfit_.insert(shape);
      }
    }
    // Fits no type whatever its target, and capacity only shrinks: the same shape need not
    // look again.
    if (tried_all && *quota_over == 0) unfit_all_.insert(own);
    return false;
  }

  // Places `c`'s target gang (or, short of room, a smaller one down to its minimum).
  // Starts only within the team's quota as held now (jobs being stopped still hold theirs);
  // `quota_over` (optional) says by how much the quota refused a gang that had room.
  bool start(const SnapshotJob& j, const Candidate& c, ClusterState& state,
             int64_t* quota_over = nullptr) {
    SnapshotJob shape = j;
    shape.gpu_model_mask = uint64_t{1} << c.model;
    PlaceOptions opts = place_options(j);
    opts.strategy = PlacementStrategy::Pack;  // a gang on the fewest nodes runs fastest
    for (int k = c.workers; k >= min_workers(j); --k) {
      shape.workers = k;
      PlaceResult r = place(shape, state, opts);
      if (r.fit != Fit::Fits) continue;
      if (const QuotaVerdict v = held_.check(j, r.placement); !v.admitted) {
        if (quota_over != nullptr) *quota_over = std::max<int64_t>(1, v.over_milli);
        continue;
      }
      held_.add(j, r.placement, +1);
      state.apply(r.placement, j.worker);
      StartAction s{j.id, std::move(r.placement)};
      if (j.elastic()) {
        s.workers = k;
        s.batch = speed(j, c.model, k).second;
      }
      plan_.starts.push_back(std::move(s));
      return true;
    }
    return false;
  }

  PlaceOptions place_options(const SnapshotJob& j) {
    return {.strategy = cfg_.placement,
            .selector_matches = selectors_.matching(j.node_selector),
            .mig_profile_by_model = migs_.by_model(j.worker.mig_profile)};
  }
  // The snapshot's node groups for one node selector (never_fits decides per group).
  const NodeGroups& groups(const std::vector<bool>* selector_matches) {
    auto it = groups_.find(selector_matches);
    if (it == groups_.end())
      it = groups_.try_emplace(selector_matches, snap_, selector_matches).first;
    return it->second;
  }

  void wait(const SnapshotJob& j, Stage stage, WaitCode code, int64_t arg) {
    plan_.waiting.push_back({j.id, stage, code, arg});
  }

  const Snapshot& snap_;
  const PolicyConfig& cfg_;
  Plan& plan_;
  std::vector<int> gpus_per_node_;  // per GPU model: the largest schedulable node's GPUs
  std::vector<Candidate> cands_;    // whole-GPU jobs, Tiresias order
  std::vector<Shape> shapes_;       // per candidate: shape_of() a pending job (fill() reads it)
  std::vector<int64_t> leaving_;    // per GPU model: GPUs of jobs already stopping
  std::vector<int> others_;         // pending fractional, MIG and CPU-only jobs, same order
  std::vector<int64_t> free_;       // per GPU model: whole GPUs not yet given (passes 1-2)
  const ClusterState* what_if_ = nullptr;  // run(): the cluster without the jobs that may move
  NodeSelectorIndex selectors_;
  MigProfileIndex migs_;
  std::map<const std::vector<bool>*, NodeGroups> groups_;
  QuotaLedger ledger_;  // quota usage of the allocation passes 1-2 work out
  QuotaLedger held_;    // quota usage as held now, with this plan's starts
  // fill(): whole free GPUs per type as of idle_starts_ starts; shapes (one type each) that
  // did not fit.
  std::vector<int64_t> idle_;
  int64_t most_idle_ = 0;  // the largest idle_ less what is promised
  size_t idle_starts_ = SIZE_MAX;
  std::unordered_set<Shape, ShapeHash> unfit_;
  std::unordered_set<Shape, ShapeHash> unfit_all_;  // shapes that fit no type now
  // collect(): per shape, kFits, or the filter that stops it on every node (never fits).
  static constexpr uint16_t kFits = 0x100;
  std::unordered_map<Shape, uint16_t, ShapeHash> ever_;
  std::vector<std::pair<double, int>> types_;  // fill()'s scratch
  std::vector<int64_t> per_key_;               // scratch: usage per quota key
};

}  // namespace

void plan_goodput(const Snapshot& snap, const PolicyConfig& cfg, Plan& plan) {
  Goodput(snap, cfg, plan).run();
}

}  // namespace trainyard::sched::internal
