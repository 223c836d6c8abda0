// `trainyard simulate --html FILE`: one self-contained HTML page of a run (no network, no other
// files): the data as JSON plus the web UI's report bundle (web/src/report.js, embedded in the
// binary by ty_web) and its CSS, inlined.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cost_scenarios.h"
#include "sim/simulator.h"
#include "util/status.h"

namespace trainyard::cli {

// The page for `data` (sim::html_report_data, plus "cost" for cost scenario runs).
util::Result<std::string> html_report(const nlohmann::json& data);
util::Status write_html_report(const std::string& path, const nlohmann::json& data);
// The "cost" part of the data of a cost scenario run: the cost table's cells and each
// scenario's money spent and nodes up, resampled onto one time grid.
nlohmann::json cost_html_data(const std::vector<sim::SimResult>& results,
                              const std::vector<sim::CostSummary>& rows, size_t max_points = 1000);

}  // namespace trainyard::cli
