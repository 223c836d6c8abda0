// The capacity scenarios of docs/cost.md, built from one cluster with cloud pools: on-demand
// only, spot restarting from scratch, spot with checkpoints at Young's interval, and the mixed
// policy (spot first, on-demand fallback, idle shutdown). Their cost figures side by side, the
// sensitivity to the interruption rate, and plots of cost and fleet size over time.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/cluster_config.h"
#include "sim/fleet.h"
#include "sim/simulator.h"
#include "util/status.h"

namespace trainyard::sim {

inline const std::vector<std::string> kCostScenarios = {"on-demand", "spot-restart", "spot-young",
                                                        "mixed"};

struct CostScenarioOptions {
  std::vector<std::string> scenarios = kCostScenarios;
  std::vector<cloud::Offering> offerings;  // the catalog
  cloud::SpotAdvisor advisor;
  cloud::SimCloudOptions simcloud;  // seed, delays; rate or replay set by the caller
  util::Duration checkpoint_cost = util::seconds(30);
  util::Duration zone_backoff = util::seconds(600);
  std::shared_ptr<const cloud::ThroughputTable> throughputs;  // optional
};

// One scenario per name, from the cluster's cloud pools: "on-demand" keeps its on-demand pools,
// the spot ones its spot pools (every job treated as preemptible), "mixed" all of them. Errors
// name the scenario and what the cluster lacks (e.g. no spot pool).
util::Result<std::vector<std::shared_ptr<const CloudScenario>>> build_cost_scenarios(
    const model::ClusterConfig& cluster, const CostScenarioOptions& options);

struct CostSummary {
  std::string scenario;
  int64_t jobs = 0;        // completed
  int64_t unfinished = 0;  // left when the run stopped (never fit, or the horizon came)
  // Why, per reason (SimResult::unfinished_by_reason; the counts sum to `unfinished`).
  std::map<std::string, int64_t> unfinished_by_reason;
  double cost_usd = 0;  // the bill
  double cost_per_job = 0;
  double avg_jct_s = 0, p99_jct_s = 0;
  double billed_gpu_hours = 0;
  double idle_gpu_hours = 0;
  double lost_gpu_hours = 0;  // work thrown away by interruptions and preemptions
  double lost_usd = 0;
  int64_t interruptions = 0;          // node reclaims
  int64_t interrupted_job_stops = 0;  // jobs stopped by them (finished or not), one per stop
  // Wall time of work lost per reclaim, per job stopped: the work thrown away by those stops
  // ÷ interrupted_job_stops, over every job (also those left unfinished).
  double lost_s_per_interruption = 0;
  double restart_s_per_interruption = 0;  // restart delays paid after those stops ÷ the same
  int32_t peak_nodes = 0;
  double showback_usd = 0;  // Σ jobs + Σ idle from the ledger: equals cost_usd
  bool stopped_at_horizon = false;
};

CostSummary summarize_cost(const SimResult& r);
// The side-by-side table, with each scenario's cost per job as a ratio to the first one.
std::string cost_table(const std::vector<CostSummary>& rows);
// Cost per completed job ÷ on-demand's, per rate (rows) and scenario (columns).
std::string sensitivity_table(const std::vector<double>& rates,
                              const std::vector<std::vector<CostSummary>>& by_rate);
// Writes cost-summary.json, cost-<scenario>.csv (per team and pool), cost-over-time.svg and
// fleet-size.svg into `dir`. Returns the paths written.
util::Result<std::vector<std::string>> write_cost_report(const std::string& dir,
                                                         const std::vector<SimResult>& results,
                                                         const std::vector<CostSummary>& rows);

}  // namespace trainyard::sim
