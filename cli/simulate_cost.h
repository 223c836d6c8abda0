// `trainyard simulate` on a cluster with cloud pools: runs the capacity scenarios of
// docs/cost.md side by side (on-demand, spot restart, spot + Young checkpoints, mixed), prints
// their cost table and the sensitivity to the interruption rate, and writes the cost report.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace trainyard::cli {

struct CostSimArgs {
  std::string scenarios = "on-demand,spot-restart,spot-young,mixed";
  std::string catalog = "../shared/catalog";
  double interruption_rate = 0.2;  // per spot node-hour
  std::string spot_trace;          // replay this file instead (cloud::load_spot_trace formats)
  std::string rates = "0.01,0.05,0.1,0.2,0.5";
  double checkpoint_cost_s = 30;
  double zone_backoff_s = 600;
  double provisioning_delay_s = 90;
  double spot_fallback_wait_s = 600;
  std::string throughputs = "../shared/traces/gavel/simulation_throughputs.json";
  std::string html;  // --html FILE: the self-contained report (cli/simulate_html.h)
  sim::RunInfo run;  // the run's trace and cluster, for the HTML report
};

void add_cost_sim_options(CLI::App* cmd, CostSimArgs& args);
bool has_cloud_pools(const sim::ClusterConfig& cluster);
// `base` carries the policy, seed, delays and progress settings shared with the policy runs.
int run_cost_scenarios(const CostSimArgs& args, const sim::Workload& workload,
                       const sim::ClusterConfig& cluster, const sim::SimOptions& base,
                       const std::string& out_dir);

}  // namespace trainyard::cli
