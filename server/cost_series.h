// Helpers shared by the server's cost files (cost_keeping.cc, cost_views.cc, cost_series_views.cc):
// the start of a budget period, the time forms of `since`/`until`, and the CSV form of a
// GET /api/v1/cost report (`?format=csv`).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/team.h"
#include "util/clock.h"
#include "util/status.h"

namespace trainyard::server {

// Start of the budget period containing `now`: the UTC day or month. Budgets are checked over it,
// and GET /api/v1/cost starts at the month's by default.
util::Time period_start(util::Time now, model::Team::BudgetPeriod period);

// "-24h", "-30m", "-7d", "-90s" from `now`, or an ISO 8601 UTC time ("2026-11-23T10:00:00Z",
// "2026-11-23"); `what` names the parameter in the error.
util::Result<util::Time> parse_when(const std::string& text, util::Time now, const char* what);

// The report of ControlPlane::cost() as CSV: one header line, then a row for the total, each
// team, each pool and each job (kind,key,name,team,cost_usd,...), numbers as in the JSON.
std::string cost_csv(const nlohmann::json& report);

}  // namespace trainyard::server
