// Cost accounting (showback): every node-second is priced at the node's rate (the spot price at
// launch, or the on-demand / reserved rate) and split over the jobs on its GPUs by GPU share;
// what no job holds is the pool's idle cost. Money is kept in exact integers, so the jobs' and
// the idle shares add up to the bill to the last unit: check_balanced() proves it.
// Used by the simulator and the server alike. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/clock.h"
#include "util/status.h"

namespace trainyard::cloud {

// Exact money: USD × kCostUnitsPerUsd. One unit is small enough that a node-hour at any price
// splits over any GPU share (milli-GPUs of 1 to 16 GPUs) without a remainder.
// __extension__: -Wpedantic rejects the GCC/Clang __int128 type otherwise.
__extension__ typedef __int128 CostUnits;
// A node interval costs price_micro_usd_per_hour × microseconds × 720720000 units
// (720720 = lcm(1..16), × 1000 milli-GPUs), and 1 USD/h for 1 h is 1e6 × 3.6e9 × 720720000.
inline constexpr CostUnits kCostUnitsPerUsd = CostUnits{3'600'000'000'000'000} * 720'720'000;
double cost_units_to_usd(CostUnits u);

// Who holds part of a node from some time on.
struct CostShare {
  std::string job;
  std::string team;
  int64_t gpu_milli = 0;  // milli-GPUs of this node the job holds
  bool operator==(const CostShare&) const = default;
};

// One closed interval of one node for one holder (a job, or idle when job is empty).
struct CostRecord {
  util::Time start{};
  util::Time end{};
  std::string node;
  std::string pool;
  std::string job;   // empty: idle (nobody held this share of the node)
  std::string team;  // empty for idle
  int64_t gpu_milli = 0;
  CostUnits cost = 0;
  // Work lost to an interruption or preemption (GPU-time since the last checkpoint), recorded
  // when the job stopped; a lost-work record has start == end and cost 0 of its own — its
  // lost_cost is part of the job's cost already, reported separately.
  util::Duration lost_gpu_time{0};
  CostUnits lost_cost = 0;
  bool interruption = false;  // lost-work record: the node was reclaimed (else a preemption)
};

// Totals for one key (a job, a team, a pool, or everything).
struct CostTotals {
  double cost_usd = 0;
  double gpu_hours = 0;       // GPU-hours held (by jobs) or billed (for a pool: all its GPUs)
  double idle_gpu_hours = 0;  // billed GPU-hours nobody held
  double idle_cost_usd = 0;
  double lost_gpu_hours = 0;  // GPU-hours of work thrown away by interruptions/preemptions
  double lost_cost_usd = 0;
  int interruptions = 0;
};

struct CostReport {
  util::Time since{};
  util::Time until{};
  CostTotals total;  // the bill: cost_usd is every node's cost, gpu_hours every billed GPU-hour
  std::map<std::string, CostTotals> jobs;
  std::map<std::string, CostTotals> teams;  // idle is not charged to teams
  std::map<std::string, CostTotals> pools;  // each pool's jobs + its idle ("__idle__" share)
};

class CostLedger {
 public:
  // The node is billed from `t` at `usd_per_hour` for as long as it is up.
  util::Status node_up(const std::string& node, const std::string& pool, int gpus,
                       double usd_per_hour, util::Time t);
  // Billing stops at `t`; open shares are closed. NotFound for a node not up.
  util::Status node_down(const std::string& node, util::Time t);
  // From `t` on, the node's GPUs are held by `shares` (replaces the previous holders). Their
  // sum may not exceed the node's GPUs × 1000.
  util::Status set_shares(const std::string& node, std::vector<CostShare> shares, util::Time t);
  // Records work a job lost on `node` when it stopped at `t` (priced at the node's rate for the
  // job's share). `interruption` counts it as a reclaim of the node rather than a preemption.
  util::Status record_lost_work(const std::string& node, const std::string& job,
                                const std::string& team, int64_t gpu_milli, util::Duration lost,
                                util::Time t, bool interruption);
  // Closes every open interval at `t` (they reopen at t), so records cover everything up to t.
  void advance(util::Time t);

  // Sums records overlapping [since, until) (an interval cut by a bound counts pro rata).
  CostReport report(util::Time since = util::Time::min(),
                    util::Time until = util::Time::max()) const;
  // Every unit billed is attributed once: Σ job + idle record costs == Σ node bills, exactly.
  util::Status check_balanced() const;
  CostUnits billed() const { return billed_; }
  const std::vector<CostRecord>& records() const { return records_; }
  // Records appended since `from` (an index into records()): what a store persists next.
  std::vector<CostRecord> records_since(size_t from) const;
  // Restores records saved earlier (server restart); open nodes are not restored.
  void restore(std::vector<CostRecord> records);

 private:
  struct OpenNode {
    std::string pool;
    int gpus = 0;
    int64_t price_micro_usd = 0;  // per node-hour
    util::Time since{};
    std::vector<CostShare> shares;
  };
  void close(const std::string& name, OpenNode& n, util::Time t);

  std::map<std::string, OpenNode> open_;
  // Nodes that went down, kept so lost work reported after node_down is still priced.
  std::map<std::string, OpenNode> gone_;
  std::vector<CostRecord> records_;
  CostUnits billed_ = 0;
};

}  // namespace trainyard::cloud
