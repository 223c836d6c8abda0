// The cost resources of the HTTP API as plain structs (docs/api.md): GET /api/v1/cost (spend by
// job, team and pool over a range, for `trainyard cost`) and GET /api/v1/cost/series (the same
// bucketed by hour or day, for the web UI's cost page). As in model/api_views.h, the server
// writes its replies from them and the CLI reads replies back into them, so each key name is
// written once (api_cost_views.cc); from_json names the first missing or ill-typed field by its
// path and never throws. These replies keep the snake_case keys they were born with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace trainyard::model {

// What a job, a team, a pool or the whole range cost (cloud::CostTotals).
struct CostTotalsView {
  double cost_usd = 0;
  double gpu_hours = 0;
  double idle_gpu_hours = 0;
  double idle_cost_usd = 0;
  double lost_gpu_hours = 0;
  double lost_cost_usd = 0;
  int interruptions = 0;
  bool operator==(const CostTotalsView&) const = default;
};

struct JobCostView {
  std::string job;   // the ledger's holder: a job id as text
  std::string name;  // "" when the holder is no job the store knows
  std::string team;
  CostTotalsView totals;  // flattened into the row
  bool operator==(const JobCostView&) const = default;
};

struct TeamCostView {
  std::string team;
  CostTotalsView totals;
  bool operator==(const TeamCostView&) const = default;
};

struct PoolCostView {
  std::string pool;
  CostTotalsView totals;
  bool operator==(const PoolCostView&) const = default;
};

// GET /api/v1/cost.
struct CostReportView {
  std::string since, until;  // RFC 3339
  std::string scope;         // all (an admin's: the bill) or team (a team's own spend)
  CostTotalsView total;
  std::vector<JobCostView> jobs;
  std::vector<TeamCostView> teams;
  std::vector<PoolCostView> pools;  // empty for a team token
  bool operator==(const CostReportView&) const = default;
};

struct TeamCostSeriesView {
  std::string team;
  std::vector<double> cost_usd;  // per bucket
  bool operator==(const TeamCostSeriesView&) const = default;
};

struct PoolCostSeriesView {
  std::string pool;
  std::vector<double> cost_usd;
  bool operator==(const PoolCostSeriesView&) const = default;
};

// GET /api/v1/cost/series: one value per bucket in each series, `times` their starts.
struct CostSeriesView {
  std::string since, until, scope;
  std::string step;  // hour or day
  int64_t step_seconds = 0;
  std::vector<int64_t> times;  // Unix seconds
  std::vector<double> total_cost_usd;
  std::vector<double> idle_cost_usd;  // empty for a team token
  std::vector<double> lost_cost_usd;
  std::vector<double> lost_gpu_hours;
  std::vector<TeamCostSeriesView> teams;
  std::vector<PoolCostSeriesView> pools;
  bool operator==(const CostSeriesView&) const = default;
};

nlohmann::json to_json(const CostReportView& v);
nlohmann::json to_json(const CostSeriesView& v);

util::Status from_json(const nlohmann::json& j, CostReportView& out);
util::Status from_json(const nlohmann::json& j, CostSeriesView& out);

}  // namespace trainyard::model
