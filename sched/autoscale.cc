// The autoscaler (contract in autoscale.h). Pure: reads the snapshot and the plan so far.
// Algorithm: 1. top pools up to min_nodes; 2. take the pending jobs held back for capacity in
// queue order (the order plan() examined them); 3. pack each gang onto nodes already coming
// (provisioning, or bought in step 1); 4. for the rest, buy where the nodes the gang opens cost
// least, among the pools of the best (spot first for preemptible jobs, priority) group that
// hold it within their maximum and the team's budget; 5. release nodes idle past their timeout.
#include "sched/autoscale.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <unordered_map>

#include "sched/internal/pool_packer.h"

namespace trainyard::sched {
namespace {

using internal::PackResult;
using internal::PoolPacker;

// Waits that more nodes would end; the others (dependency, quota, budget, victims) would not.
bool is_capacity_wait(WaitCode c) {
  switch (c) {
    case WaitCode::NoCapacityNow:
    case WaitCode::NeverFits:
    case WaitCode::HeadOfLine:
    case WaitCode::BackfillWouldDelay:
    case WaitCode::Unexamined:
    case WaitCode::PreemptionDeferred:
      return true;
    default:
      return false;
  }
}

bool is_spot(const SnapshotPool& pool) {
  return pool.kind == model::PoolKind::Spot;
}

struct PoolState {
  PoolState(const Snapshot& snap, const SnapshotPool& pool) : packer(snap, pool) {}
  int zone = -1;         // first zone not blocked; -1 = the provider chooses
  bool can_buy = false;  // autoscaled, and the provider has not said its capacity is gone
  int headroom = 0;      // nodes it may still buy in this call
  int bought = 0;
  JobId first_job = util::kNoJob;
  model::Labels labels;  // the labels its nodes will carry, for node selectors
  PoolPacker packer;
};

enum class BuyOutcome { Bought, Unavailable, OverBudget };

class Autoscaler {
 public:
  Autoscaler(const Snapshot& snap, const AutoscaleConfig& config, Plan& plan)
      : snap_(snap), config_(config), plan_(plan) {
    for (const SnapshotPool& pool : snap.pools) pools_.push_back(init_pool(pool));
    busy_.assign(snap.nodes.size(), false);
    for (const SnapshotJob& job : snap.jobs) {
      if (!job.is_running()) continue;
      for (const Assignment& a : job.placement) busy_[a.node_idx] = true;
    }
    for (const StartAction& s : plan.starts) {
      for (const Assignment& a : s.placement) busy_[a.node_idx] = true;
    }
    for (size_t n = 0; n < snap.nodes.size(); ++n) {
      const SnapshotNode& node = snap.nodes[n];
      if (node.pool < 0 || node.pool >= static_cast<int>(pools_.size()) || busy_[n] ||
          !node.schedulable || !snap.pools[node.pool].autoscaled)
        continue;
      pools_[node.pool].packer.add_idle(static_cast<int>(n));
    }
    for (size_t i = 0; i < plan.waiting.size(); ++i)
      wait_pos_[plan.waiting[i].job.value()] = static_cast<int>(i);
    for (const SnapshotTeam& team : snap.teams) budget_left_.push_back(team.budget_left);
  }

  void run() {
    top_up_min();
    const std::vector<int> order = demand();
    std::vector<int> rest;
    for (int job_idx : order) {
      if (has_budget(snap_.jobs[job_idx]) && !serve_from_coming(snap_.jobs[job_idx]))
        rest.push_back(job_idx);
    }
    for (int job_idx : rest) {
      if (has_budget(snap_.jobs[job_idx])) buy_for(snap_.jobs[job_idx]);
    }
    for (size_t p = 0; p < pools_.size(); ++p) {
      const PoolState& s = pools_[p];
      if (s.bought > 0)
        plan_.scale_ups.push_back({static_cast<int>(p), s.zone, s.bought, s.first_job});
    }
    release_idle();
  }

 private:
  PoolState init_pool(const SnapshotPool& pool) const {
    PoolState s(snap_, pool);
    // The first zone not backing off after a reclaim. When every zone is, the back-off is a
    // preference, not a ban: the zone whose back-off ends first (reclaims are not shortages).
    for (size_t z = 0; z < pool.zones.size(); ++z) {
      if (pool.zones[z].blocked_until <= snap_.now) {
        s.zone = static_cast<int>(z);
        break;
      }
      if (s.zone < 0 || pool.zones[z].blocked_until < pool.zones[s.zone].blocked_until)
        s.zone = static_cast<int>(z);
    }
    s.can_buy = pool.autoscaled && pool.unavailable_until <= snap_.now;
    s.headroom = std::max(0, pool.max_nodes - pool.ready - pool.provisioning);
    s.labels = pool.labels;
    if (pool.gpu_model >= 0 && pool.gpu_model < static_cast<int>(snap_.gpu_models.size()))
      s.labels[model::kLabelGpuProduct] = snap_.gpu_models[pool.gpu_model];
    s.labels[model::kLabelPool] = pool.name;
    return s;
  }

  bool has_budget(const SnapshotJob& job) const {
    return job.team < 0 || budget_left_[job.team] > 0;
  }

  // Pending jobs that did not start and wait for capacity, in the order plan() examined them
  // (jobs the plan does not mention last, by priority, then arrival).
  std::vector<int> demand() const {
    std::vector<bool> started(snap_.jobs.size(), false);
    std::unordered_map<int64_t, int> index;
    for (size_t i = 0; i < snap_.jobs.size(); ++i)
      index[snap_.jobs[i].id.value()] = static_cast<int>(i);
    for (const StartAction& s : plan_.starts) {
      if (auto it = index.find(s.job.value()); it != index.end()) started[it->second] = true;
    }
    using Key = std::tuple<int, int, Time, int64_t, int>;
    std::vector<Key> keys;
    for (size_t i = 0; i < snap_.jobs.size(); ++i) {
      const SnapshotJob& job = snap_.jobs[i];
      if (job.is_running() || started[i]) continue;
      int pos = std::numeric_limits<int>::max();
      if (auto it = wait_pos_.find(job.id.value()); it != wait_pos_.end()) {
        if (!is_capacity_wait(plan_.waiting[it->second].code)) continue;
        pos = it->second;
      }
      keys.emplace_back(pos, -job.priority, job.submitted, job.id.value(), static_cast<int>(i));
    }
    std::sort(keys.begin(), keys.end());
    std::vector<int> order;
    for (const Key& k : keys) order.push_back(std::get<4>(k));
    return order;
  }

  void top_up_min() {
    for (size_t p = 0; p < pools_.size(); ++p) {
      const SnapshotPool& pool = snap_.pools[p];
      PoolState& s = pools_[p];
      const int missing = pool.min_nodes - pool.ready - pool.provisioning;
      if (!s.can_buy || missing <= 0) continue;
      const int count = std::min(missing, s.headroom);
      s.packer.add_bought(count);
      s.bought += count;
      s.headroom -= count;
    }
  }

  // Pools that could ever hold a worker of `job`, best first.
  std::vector<int> pools_for(const SnapshotJob& job) const {
    std::vector<int> out;
    for (size_t p = 0; p < pools_.size(); ++p) {
      const SnapshotPool& pool = snap_.pools[p];
      if (!pool.autoscaled || (is_spot(pool) && !job.preemptible)) continue;
      if (!model::selector_matches(job.node_selector, pools_[p].labels)) continue;
      if (pools_[p].packer.worker_fits_shape(job)) out.push_back(static_cast<int>(p));
    }
    auto key = [&](int p) {
      const SnapshotPool& pool = snap_.pools[p];
      const double per_gpu = pool.price_per_node_hour / std::max(1, pool.gpus_per_node) /
                             std::max(1e-9, pool.relative_throughput);
      return std::tuple<bool, int, double, const std::string&>(!is_spot(pool), -pool.priority,
                                                               per_gpu, pool.name);
    };
    std::sort(out.begin(), out.end(), [&](int a, int b) { return key(a) < key(b); });
    return out;
  }

  void awaiting(const SnapshotJob& job, int pool, const PackResult& r) {
    PoolState& s = pools_[pool];
    if (r.on_bought && s.first_job == util::kNoJob) s.first_job = job.id;
    // Packed onto idle nodes that are up: it waits for something else (its turn, a gang's
    // placement), and its reason says so.
    if (!r.on_coming) return;
    const WaitReason reason{job.id, Stage::Autoscale, WaitCode::AwaitingNodes, pool, 0};
    if (auto it = wait_pos_.find(job.id.value()); it != wait_pos_.end()) {
      plan_.waiting[it->second] = reason;
    } else {
      wait_pos_[job.id.value()] = static_cast<int>(plan_.waiting.size());
      plan_.waiting.push_back(reason);
    }
  }

  // Nodes already coming cost nothing more, so any pool the job may use will do, on demand
  // included for a preemptible job.
  bool serve_from_coming(const SnapshotJob& job) {
    for (int p : pools_for(job)) {
      const PackResult r = pools_[p].packer.pack(job, /*max_new=*/0);
      if (!r.fits) continue;
      pools_[p].packer.commit();
      awaiting(job, p, r);
      return true;
    }
    return false;
  }

  // What buying for `job` in pool `p` would take; the packer holds it until commit().
  struct Quote {
    BuyOutcome outcome = BuyOutcome::Unavailable;
    PackResult pack;
    double cost = 0;  // USD over the budget horizon for the nodes it opens
  };
  Quote quote(const SnapshotJob& job, int p) {
    PoolState& s = pools_[p];
    Quote q;
    if (!s.can_buy) return q;
    q.pack = s.packer.pack(job, s.headroom);
    if (!q.pack.fits) return q;
    const double hours = util::to_seconds(config_.budget_horizon) / 3600.0;
    q.cost = q.pack.new_nodes * snap_.pools[p].price_per_node_hour * hours;
    q.outcome = job.team >= 0 && q.cost > budget_left_[job.team] ? BuyOutcome::OverBudget
                                                                 : BuyOutcome::Bought;
    return q;
  }

  void buy(const SnapshotJob& job, int p, const Quote& q) {
    PoolState& s = pools_[p];
    s.packer.pack(job, s.headroom);  // quotes of other pools may have run in between
    s.packer.commit();
    if (job.team >= 0) budget_left_[job.team] -= q.cost;
    s.bought += q.pack.new_nodes;
    s.headroom -= q.pack.new_nodes;
    awaiting(job, p, q.pack);
  }

  // Pools come grouped by (spot first, priority); within a group the gang goes where the nodes
  // it opens cost least per unit of work (a 1-GPU job on a 1-GPU machine, not on an 8-GPU one;
  // a faster GPU when its speed outweighs its price), then by price per unit of work. On demand is
  // tried only after the job has waited spot_fallback_wait, unless spot cannot take it at all
  // (exhausted, full, or no spot pool fits).
  void buy_for(const SnapshotJob& job) {
    const bool waited = snap_.now - job.queued_since >= config_.spot_fallback_wait;
    bool spot_later = false;  // a spot pool could serve it were the team's budget not short
    const std::vector<int> cands = pools_for(job);
    for (size_t i = 0; i < cands.size();) {
      const SnapshotPool& head = snap_.pools[cands[i]];
      size_t j = i;
      while (j < cands.size() && is_spot(snap_.pools[cands[j]]) == is_spot(head) &&
             snap_.pools[cands[j]].priority == head.priority)
        ++j;
      if (!is_spot(head) && spot_later && !waited) return;
      int best = -1;
      Quote best_q;
      for (size_t k = i; k < j; ++k) {
        const int p = cands[k];
        const Quote q = quote(job, p);
        if (q.outcome == BuyOutcome::OverBudget && is_spot(snap_.pools[p])) spot_later = true;
        if (q.outcome != BuyOutcome::Bought) continue;
        // Cost per unit of work: a GPU twice as fast finishes the gang in half the time.
        const double per_work = q.cost / std::max(1e-9, snap_.pools[p].relative_throughput);
        const double best_per_work =
            best < 0 ? 0 : best_q.cost / std::max(1e-9, snap_.pools[best].relative_throughput);
        if (best < 0 || per_work < best_per_work) {
          best = p;
          best_q = q;
        }
      }
      if (best >= 0) {
        buy(job, best, best_q);
        return;
      }
      i = j;
    }
  }

  // Nodes idle past their pool's timeout, while the pool stays at min_nodes or above. A pool
  // that buys in this call keeps its nodes: releasing one while buying another is waste.
  void release_idle() {
    std::vector<bool> busy = busy_;
    // Idle nodes that waiting gangs were packed onto stay: they are part of what they wait for.
    for (const PoolState& s : pools_) {
      for (int n : s.packer.used_idle_nodes()) busy[n] = true;
    }
    std::vector<int> released(pools_.size(), 0);
    for (size_t n = 0; n < snap_.nodes.size(); ++n) {
      const SnapshotNode& node = snap_.nodes[n];
      if (node.pool < 0 || node.pool >= static_cast<int>(pools_.size()) || busy[n]) continue;
      const SnapshotPool& pool = snap_.pools[node.pool];
      if (!pool.autoscaled || pool.idle_timeout <= Duration(0) || pools_[node.pool].bought > 0)
        continue;
      if (node.idle_since == Time::max() || snap_.now - node.idle_since < pool.idle_timeout)
        continue;
      if (pool.ready + pool.provisioning - released[node.pool] <= pool.min_nodes) continue;
      ++released[node.pool];
      plan_.releases.push_back({static_cast<int>(n)});
    }
  }

  const Snapshot& snap_;
  const AutoscaleConfig& config_;
  Plan& plan_;
  std::vector<PoolState> pools_;
  std::unordered_map<int64_t, int> wait_pos_;  // job id -> index in plan_.waiting
  std::vector<double> budget_left_;            // per team, less what this call bought
  std::vector<bool> busy_;                     // per node: a job holds or starts on it
};

}  // namespace

void autoscale(const Snapshot& snap, const AutoscaleConfig& config, Plan& plan) {
  if (snap.pools.empty()) return;
  Autoscaler(snap, config, plan).run();
}

Duration young_checkpoint_interval(Duration checkpoint_cost, double interruptions_per_hour) {
  if (!(interruptions_per_hour > 0) || checkpoint_cost <= Duration(0)) return Duration(0);
  const double mtbf_seconds = 3600.0 / interruptions_per_hour;
  return util::seconds_f(std::sqrt(2.0 * util::to_seconds(checkpoint_cost) * mtbf_seconds));
}

}  // namespace trainyard::sched
